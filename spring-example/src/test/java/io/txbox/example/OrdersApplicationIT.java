package io.txbox.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The example end to end against real PostgreSQL and Kafka: an order placed over HTTP (twice,
 * as a retrying client does) is charged exactly once, through the outbox, the embedded relay,
 * Kafka and the inbox; a refund posted twice with one Idempotency-Key is made once, and the
 * retry gets the first response back. The HTTP requests are the {@code curl} lines of this
 * module's and the starter's README, sent with the headers curl sends. PostgreSQL only: the example
 * is a PostgreSQL service, whose pom keeps Spring Boot's Flyway 11, and no Flyway 11 MySQL module
 * is served here; the starter's own suites run on MariaDB too.
 */
class OrdersApplicationIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();
    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @Test
    void orderPlacedTwiceOverHttp_chargedOnce() throws Exception {
        String topic = KAFKA.uniqueTopic("payments");
        KAFKA.createTopic(topic, 1);
        // command-line arguments, which win over the application's own application.properties
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(OrdersApplication.class).run(
                "--server.port=0",
                "--spring.datasource.url=" + PG.jdbcUrl(PG.schema()),
                "--spring.datasource.username=" + PG.user(),
                "--spring.datasource.password=" + PG.password(),
                "--txbox.schema=" + PG.schema(),
                "--spring.kafka.bootstrap-servers=" + KAFKA.bootstrapServers(),
                "--spring.kafka.consumer.group-id=" + topic,
                "--example.payments-topic=" + topic)) {
            String port = context.getEnvironment().getProperty("local.server.port");
            HttpClient http = HttpClient.newHttpClient();
            // the requests the READMEs show, sent as curl sends them
            List<CurlLine> example = CurlLine.in(Path.of("README.md"));
            assertThat(example).hasSize(2);
            CurlLine put = example.get(0);
            assertThat(put.send(http, port).body()).isEqualTo("placed");
            assertThat(put.send(http, port).body()).isEqualTo("already placed");

            JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
            await().atMost(Duration.ofSeconds(60)).until(() -> count(jdbc, "payments") == 1);
            HttpResponse<String> health = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/actuator/health")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"txboxRelay\"");
            assertThat(jdbc.queryForObject("SELECT step_key FROM payments", String.class)).isEqualTo("order-42:charge");
            assertThat(count(jdbc, "orders")).isEqualTo(1);

            CurlLine refund = example.get(1);
            HttpResponse<String> first = refund.send(http, port);
            HttpResponse<String> retried = refund.send(http, port);   // "twice: one refund"
            assertThat(first.statusCode()).isEqualTo(201);
            assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
            assertThat(retried.statusCode()).isEqualTo(201);
            assertThat(retried.body()).isEqualTo(first.body()).startsWith("{\"refundId\":");
            assertThat(retried.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
            assertThat(retried.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            // the starter README shows the same refund, with the same key: the stored 201 again
            List<CurlLine> starter = CurlLine.in(Path.of("..", "spring-boot-starter", "README.md"));
            assertThat(starter).hasSize(2);
            for (CurlLine line : starter) {
                HttpResponse<String> replayed = line.send(http, port);
                assertThat(replayed.statusCode()).isEqualTo(201);
                assertThat(replayed.body()).isEqualTo(first.body());
                assertThat(replayed.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            }
            // without its Content-Type, curl -d sends a form, which the filter refuses before it runs
            HttpResponse<String> form = CurlLine.parse(
                    "curl -i -X POST localhost:8080/refunds -H 'Idempotency-Key: refund-43' -d order-43").send(http, port);
            assertThat(form.statusCode()).isEqualTo(415);
            assertThat(form.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(jdbc.queryForObject("SELECT count(*) FROM refunds WHERE order_id = 'order-42'", Long.class))
                    .isEqualTo(1);
            assertThat(count(jdbc, "refunds")).isEqualTo(1);
        }
    }

    private static long count(JdbcTemplate jdbc, String table) {
        Long n = jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class);
        return n == null ? 0 : n;
    }
}
