package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The Spring MVC Idempotency-Key filter on a real embedded server, one per database: a controller
 * that writes through JdbcTemplate and a JPA repository runs once per key, its writes commit
 * with the stored response, and a failure leaves nothing behind.
 */
class IdempotencyFilterIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @RegisterExtension
    static final AppPerDatabase APPS = new AppPerDatabase(db ->
            new SpringApplicationBuilder(TestApplication.class, Orders.class)
                    .properties(TestDatabaseProperties.properties(db, db.schema()))
                    .properties("server.port=0", "spring.application.name=orders", "spring.flyway.enabled=false",
                            "txbox.http.idempotency.enabled=true", "txbox.http.idempotency.lease=1m")
                    .run());

    int port;
    JdbcTemplate jdbc;
    TxboxTables tables;
    Orders orders;
    final HttpClient http = HttpClient.newHttpClient();

    /** Takes the port and beans of {@code db}'s application and empties its tables. */
    void on(TestDatabase db) {
        ConfigurableApplicationContext app = APPS.on(db);
        port = app.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
        jdbc = app.getBean(JdbcTemplate.class);
        tables = app.getBean(TxboxTables.class);
        orders = app.getBean(Orders.class);
        jdbc.execute("CREATE TABLE IF NOT EXISTS audit_log (order_id text NOT NULL, event text NOT NULL)");
        for (String table : new String[] {"audit_log", "shipment", tables.inboxTable()}) {
            jdbc.execute("TRUNCATE TABLE " + table);
        }
        orders.reset();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void firstCall_runsTheController_replayReturnsTheStoredStatusHeadersAndBody(TestDatabase db) throws Exception {
        on(db);
        HttpResponse<String> first = post("/orders/o-1", "k-1", "{\"item\":\"book\"}");
        HttpResponse<String> replay = post("/orders/o-1", "k-1", "{\"item\":\"book\"}");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).isEqualTo("{\"orderId\":\"o-1\",\"run\":1}");
        assertThat(first.headers().firstValue("Location")).hasValue("/orders/o-1");
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Location")).hasValue("/orders/o-1");
        assertThat(replay.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(orders.runs.get()).isEqualTo(1);
        assertThat(count("audit_log")).isEqualTo(1);
        assertThat(count("shipment")).isEqualTo(1);
        assertThat(jdbc.queryForObject("SELECT consumer FROM " + tables.inboxTable() + " WHERE status = 'COMPLETED'",
                String.class)).isEqualTo("orders.http");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void sameKey_differentBody_is422_andDoesNotRun(TestDatabase db) throws Exception {
        on(db);
        assertThat(post("/orders/o-2", "k-2", "{\"item\":\"book\"}").statusCode()).isEqualTo(201);

        HttpResponse<String> reused = post("/orders/o-2", "k-2", "{\"item\":\"pen\"}");

        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(orders.runs.get()).isEqualTo(1);
        assertThat(count("shipment")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void sameKey_whileTheFirstRuns_is409_thenTheFirstCompletes(TestDatabase db) throws Exception {
        on(db);
        orders.hold = new CountDownLatch(1);
        CompletableFuture<HttpResponse<String>> first = http.sendAsync(request("/orders/o-3", "k-3", "{}"),
                HttpResponse.BodyHandlers.ofString());
        assertThat(orders.entered.await(30, TimeUnit.SECONDS)).isTrue();

        HttpResponse<String> concurrent = post("/orders/o-3", "k-3", "{}");
        orders.hold.countDown();

        assertThat(concurrent.statusCode()).isEqualTo(409);
        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        assertThat(orders.runs.get()).isEqualTo(1);
        assertThat(count("shipment")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void missingOversizedOrMalformedKey_is400_andDoesNotRun(TestDatabase db) throws Exception {
        on(db);
        HttpResponse<String> missing = http.send(HttpRequest.newBuilder(uri("/orders/o-4"))
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> oversized = post("/orders/o-4", "k".repeat(256), "{}");
        HttpResponse<String> malformed = post("/orders/o-4", "\"unterminated", "{}");

        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(missing.body()).contains("requires an Idempotency-Key header");
        assertThat(oversized.statusCode()).isEqualTo(400);
        assertThat(malformed.statusCode()).isEqualTo(400);
        assertThat(orders.runs.get()).isZero();
        assertThat(count("shipment")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void controllerFails_afterItsWrites_nothingIsStoredOrWritten_andARetryRuns(TestDatabase db) throws Exception {
        on(db);
        orders.failAfterWrites.set(true);
        HttpResponse<String> failed = post("/orders/o-5", "k-5", "{}");

        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(failed.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(count("audit_log")).isZero();
        assertThat(count("shipment")).isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM " + tables.inboxTable() + " WHERE status = 'COMPLETED'",
                Integer.class)).isZero();

        HttpResponse<String> retry = post("/orders/o-5", "k-5", "{}");

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(orders.runs.get()).isEqualTo(2);
        assertThat(count("audit_log")).isEqualTo(1);
        assertThat(count("shipment")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void formPost_asCurlDashDSendsIt_is415AtOnce_andTheKeyStaysUnused(TestDatabase db) throws Exception {
        on(db);
        // what `curl -X POST .../orders/o-7 -H 'Idempotency-Key: k-7' -d order-42` sends
        HttpResponse<String> form = http.send(HttpRequest.newBuilder(uri("/orders/o-7")).header("Idempotency-Key", "k-7")
                .header("User-Agent", "curl/8.5.0").header("Accept", "*/*")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("order-42")).build(), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> multipart = http.send(HttpRequest.newBuilder(uri("/orders/o-7")).header("Idempotency-Key", "k-7")
                .header("Content-Type", "multipart/form-data; boundary=b")
                .POST(HttpRequest.BodyPublishers.ofString("--b\r\nContent-Disposition: form-data; name=\"order\"\r\n\r\n"
                        + "order-42\r\n--b--\r\n")).build(), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> formWithCharset = http.send(HttpRequest.newBuilder(uri("/orders/o-7"))
                .header("Idempotency-Key", "k-7").header("Content-Type", "Application/X-WWW-Form-Urlencoded; charset=UTF-8")
                .POST(HttpRequest.BodyPublishers.ofString("order=order-42")).build(), HttpResponse.BodyHandlers.ofString());

        assertThat(form.statusCode()).isEqualTo(415);
        assertThat(form.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(form.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(form.body()).contains("application/x-www-form-urlencoded").contains("key is still unused");
        assertThat(multipart.statusCode()).isEqualTo(415);
        assertThat(multipart.body()).contains("multipart/form-data");
        assertThat(formWithCharset.statusCode()).isEqualTo(415);
        assertThat(orders.runs.get()).isZero();
        assertThat(count(tables.inboxTable())).isZero();

        HttpResponse<String> json = post("/orders/o-7", "k-7", "{\"order\":\"order-42\"}");

        assertThat(json.statusCode()).isEqualTo(201);
        assertThat(json.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(orders.runs.get()).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void requestWithoutAFilteredMethod_passesUntouched(TestDatabase db) throws Exception {
        on(db);
        HttpResponse<String> put = http.send(HttpRequest.newBuilder(uri("/orders/o-6"))
                .PUT(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());

        assertThat(put.statusCode()).isEqualTo(201);
        assertThat(count("shipment")).isEqualTo(1);
    }

    private HttpResponse<String> post(String path, String key, String body) throws Exception {
        return http.send(request(path, key, body), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest request(String path, String key, String body) {
        return HttpRequest.newBuilder(uri(path)).header("Idempotency-Key", key).header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    private int count(String table) {
        return jdbc.queryForObject("SELECT count(*) FROM " + table, Integer.class);
    }

    /** A controller that writes through JdbcTemplate and JPA, then answers 201. */
    @RestController
    static class Orders {
        final AtomicInteger runs = new AtomicInteger();
        final AtomicBoolean failAfterWrites = new AtomicBoolean();
        final CountDownLatch entered = new CountDownLatch(1);
        volatile CountDownLatch hold = new CountDownLatch(0);
        private final JdbcTemplate jdbc;
        private final ShipmentRepository shipments;

        Orders(JdbcTemplate jdbc, ShipmentRepository shipments) {
            this.jdbc = jdbc;
            this.shipments = shipments;
        }

        void reset() {
            runs.set(0);
            failAfterWrites.set(false);
            hold = new CountDownLatch(0);
        }

        @PostMapping(path = "/orders/{id}", produces = "application/json")
        ResponseEntity<String> create(@PathVariable String id, @RequestBody(required = false) String body)
                throws InterruptedException {
            int run = runs.incrementAndGet();
            jdbc.update("INSERT INTO audit_log (order_id, event) VALUES (?, 'created')", id);
            shipments.save(new Shipment(id));
            entered.countDown();
            if (!hold.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the request");
            }
            if (failAfterWrites.getAndSet(false)) {
                throw new IllegalStateException("the controller fails after its writes");
            }
            return ResponseEntity.created(URI.create("/orders/" + id)).body("{\"orderId\":\"" + id + "\",\"run\":" + run + "}");
        }

        @org.springframework.web.bind.annotation.PutMapping("/orders/{id}")
        ResponseEntity<Void> put(@PathVariable String id) {
            shipments.save(new Shipment(id));
            return ResponseEntity.status(201).build();
        }
    }
}
