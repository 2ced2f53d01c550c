package io.txbox.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The example end to end against real PostgreSQL and Kafka: an order placed over HTTP (twice,
 * as a retrying client does) is charged exactly once, through the outbox, the embedded relay,
 * Kafka and the inbox; a refund posted twice with one Idempotency-Key is made once, and the
 * retry gets the first response back.
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
            HttpRequest put = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders/order-42"))
                    .PUT(HttpRequest.BodyPublishers.ofString("42.00")).build();
            assertThat(http.send(put, HttpResponse.BodyHandlers.ofString()).body()).isEqualTo("placed");
            assertThat(http.send(put, HttpResponse.BodyHandlers.ofString()).body()).isEqualTo("already placed");

            JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
            await().atMost(Duration.ofSeconds(60)).until(() -> count(jdbc, "payments") == 1);
            HttpResponse<String> health = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/actuator/health")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"txboxRelay\"");
            assertThat(jdbc.queryForObject("SELECT step_key FROM payments", String.class)).isEqualTo("order-42:charge");
            assertThat(count(jdbc, "orders")).isEqualTo(1);

            HttpRequest refund = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/refunds"))
                    .header("Idempotency-Key", "refund-order-42").POST(HttpRequest.BodyPublishers.ofString("order-42"))
                    .build();
            HttpResponse<String> first = http.send(refund, HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> retried = http.send(refund, HttpResponse.BodyHandlers.ofString());
            assertThat(first.statusCode()).isEqualTo(201);
            assertThat(retried.statusCode()).isEqualTo(201);
            assertThat(retried.body()).isEqualTo(first.body()).startsWith("{\"refundId\":");
            assertThat(retried.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(count(jdbc, "refunds")).isEqualTo(1);
        }
    }

    private static long count(JdbcTemplate jdbc, String table) {
        Long n = jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class);
        return n == null ? 0 : n;
    }
}
