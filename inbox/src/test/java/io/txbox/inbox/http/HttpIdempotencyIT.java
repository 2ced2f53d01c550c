package io.txbox.inbox.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Idempotency-Key helper behind a real JDK {@link HttpServer}, driven by a real HTTP
 * client: every status the IETF draft asks for.
 */
class HttpIdempotencyIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static HttpServer server;
    static HttpClient client;
    static URI base;
    static final AtomicInteger calls = new AtomicInteger();
    /** What the application answers next: status code and body. */
    static volatile int nextStatus = 201;
    static volatile CountDownLatch gate = new CountDownLatch(0);
    static volatile CountDownLatch entered = new CountDownLatch(0);

    @BeforeAll
    static void start() throws Exception {
        TxboxTables tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        HttpIdempotency idempotency = HttpIdempotency.builder(PG.dataSource(), "orders-api").tables(tables).build();

        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/orders", idempotency.forHttpServer(exchange -> {
            int n = calls.incrementAndGet();
            entered.countDown();
            try {
                gate.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = exchange.getRequestBody().readAllBytes();
            byte[] out = ("{\"order\":" + n + ",\"echo\":\"" + new String(body, UTF_8) + "\"}").getBytes(UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.getResponseHeaders().add("Location", "/orders/" + n);
            exchange.getResponseHeaders().add("X-Request-Time", String.valueOf(System.nanoTime()));
            exchange.sendResponseHeaders(nextStatus, out.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(out);
            }
        }));
        server.start();
        base = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        server.stop(0);
    }

    @BeforeEach
    void reset() {
        calls.set(0);
        nextStatus = 201;
        gate = new CountDownLatch(0);
        entered = new CountDownLatch(0);
    }

    private static HttpResponse<byte[]> post(String path, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Test
    void missingKey_is400ProblemAndNothingRuns() throws Exception {
        HttpResponse<byte[]> r = post("/orders", null, "{}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(new String(r.body(), UTF_8)).contains("\"status\":400").contains("requires an Idempotency-Key");
        assertThat(calls).hasValue(0);
    }

    @Test
    void malformedKey_is400Problem() throws Exception {
        HttpResponse<byte[]> r = post("/orders", "x".repeat(300), "{}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(new String(r.body(), UTF_8)).contains("more than the limit of 255");
        assertThat(calls).hasValue(0);
    }

    @Test
    void completedRequest_isReplayedByteForByteWithStoredStatusAndHeaders() throws Exception {
        HttpResponse<byte[]> first = post("/orders", "key-replay", "apple");
        HttpResponse<byte[]> again = post("/orders", "key-replay", "apple");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.statusCode()).isEqualTo(201);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(again.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(again.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(again.headers().firstValue("X-Request-Time")).isEmpty(); // not a replayed header
        assertThat(calls).hasValue(1);
    }

    @Test
    void sameKeyStillInFlight_is409() throws Exception {
        gate = new CountDownLatch(1);
        entered = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> slow = CompletableFuture.supplyAsync(() -> {
            try {
                return post("/orders", "key-busy", "pear");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        HttpResponse<byte[]> concurrent = post("/orders", "key-busy", "pear");
        gate.countDown();

        assertThat(concurrent.statusCode()).isEqualTo(409);
        assertThat(new String(concurrent.body(), UTF_8)).contains("still being processed");
        assertThat(slow.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        assertThat(calls).hasValue(1);
    }

    @Test
    void sameKeyDifferentBody_is422() throws Exception {
        post("/orders", "key-body", "apple");
        HttpResponse<byte[]> r = post("/orders", "key-body", "banana");
        assertThat(r.statusCode()).isEqualTo(422);
        assertThat(new String(r.body(), UTF_8)).contains("different request");
        assertThat(calls).hasValue(1);
    }

    @Test
    void sameKeyDifferentPath_is422() throws Exception {
        post("/orders/a", "key-path", "apple");
        HttpResponse<byte[]> r = post("/orders/b", "key-path", "apple");
        assertThat(r.statusCode()).isEqualTo(422);
    }

    @Test
    void sameKeyDifferentMethod_is422() throws Exception {
        post("/orders", "key-method", "");
        HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(base.resolve("/orders"))
                .PUT(HttpRequest.BodyPublishers.ofString("")).header("Idempotency-Key", "key-method").build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).isEqualTo(422);
    }

    @Test
    void serverError_isNotCachedSoRetryRunsAgain() throws Exception {
        nextStatus = 503;
        assertThat(post("/orders", "key-5xx", "apple").statusCode()).isEqualTo(503);
        nextStatus = 201;
        HttpResponse<byte[]> retry = post("/orders", "key-5xx", "apple");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(calls).hasValue(2);
    }

    @Test
    void clientError_isCachedAndReplayed() throws Exception {
        nextStatus = 402;
        HttpResponse<byte[]> first = post("/orders", "key-4xx", "apple");
        nextStatus = 201;
        HttpResponse<byte[]> again = post("/orders", "key-4xx", "apple");
        assertThat(first.statusCode()).isEqualTo(402);
        assertThat(again.statusCode()).isEqualTo(402);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(calls).hasValue(1);
    }

    @Test
    void handle_frameworkNeutral_exceptionIs500AndNotCached() {
        HttpIdempotency idempotency = HttpIdempotency.builder(PG.dataSource(), "neutral")
                .tables(TxboxTables.inSchema(PG.schema())).build();
        HttpRequestData request = new HttpRequestData("POST", "/pay",
                Map.of("idempotency-key", List.of("n-1")), "x".getBytes(UTF_8));

        HttpResponseData failed = idempotency.handle(request, r -> {
            throw new IllegalStateException("db password is hunter2");
        });
        HttpResponseData ok = idempotency.handle(request, r -> HttpResponseData.of(200, "text/plain", "paid"));
        HttpResponseData replay = idempotency.handle(request, r -> HttpResponseData.of(200, "text/plain", "twice"));

        assertThat(failed.status()).isEqualTo(500);
        assertThat(new String(failed.body(), UTF_8)).doesNotContain("hunter2");
        assertThat(ok.status()).isEqualTo(200);
        assertThat(replay.body()).asString(UTF_8).isEqualTo("paid");
        assertThat(replay.header("content-type")).isEqualTo("text/plain");
    }

    @Test
    void handle_keyOptionalForSomeRequests_runsWithoutIdempotency() {
        HttpIdempotency idempotency = HttpIdempotency.builder(PG.dataSource(), "optional")
                .tables(TxboxTables.inSchema(PG.schema()))
                .keyRequired(r -> !r.method().equals("GET"))
                .build();
        HttpRequestData get = new HttpRequestData("GET", "/orders/1", Map.of(), null);
        assertThat(idempotency.handle(get, r -> HttpResponseData.of(200, "text/plain", "order")).status())
                .isEqualTo(200);
    }

    @Test
    void handle_bodyOverCap_is413() {
        HttpIdempotency idempotency = HttpIdempotency.builder(PG.dataSource(), "capped")
                .tables(TxboxTables.inSchema(PG.schema())).maxBodyBytes(10).build();
        HttpRequestData big = new HttpRequestData("POST", "/x", Map.of("Idempotency-Key", List.of("big")),
                new byte[11]);
        assertThat(idempotency.handle(big, r -> HttpResponseData.of(200, "text/plain", "no")).status())
                .isEqualTo(413);
    }
}
