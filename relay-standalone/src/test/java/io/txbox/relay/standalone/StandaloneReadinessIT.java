package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TestRabbit;
import io.txbox.testkit.TxboxSchema;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The standalone relay's readiness probe names a RabbitMQ exchange that does not exist. */
class StandaloneReadinessIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static Connection admin;
    static Channel ch;

    @BeforeAll
    static void setUp() throws Exception {
        TxboxSchema.migrated(PG);
        admin = RABBIT.newConnection();
        ch = admin.createChannel();
    }

    @AfterAll
    static void tearDown() throws Exception {
        admin.close();
    }

    @Test
    void missingExchange_standaloneReadiness_isDownNamingTheExchange() throws Exception {
        String missing = RABBIT.name("absent");
        RelayConfig config = RelayConfig.load(null, Map.of(
                "TXBOX_JDBC_URL", PG.jdbcUrl(),
                "TXBOX_JDBC_USER", PG.user(),
                "TXBOX_JDBC_PASSWORD", PG.password(),
                "TXBOX_SCHEMA", PG.schema(),
                "TXBOX_RABBITMQ_URI", RABBIT.uri(),
                "TXBOX_DESTINATION_ABSENT", "rabbitmq:" + missing,
                "TXBOX_HTTP_HOST", "127.0.0.1",
                "TXBOX_HTTP_PORT", "0"));
        try (StandaloneRelay process = StandaloneRelay.start(config)) {
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> ready = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + process.httpPort() + "/health/ready")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(ready.statusCode()).isEqualTo(503);
            assertThat(ready.body()).contains("rabbitmq:absent").contains("exchange \\\"" + missing + "\\\" does not exist");

            ch.exchangeDeclare(missing, "topic", false);
            await().atMost(Duration.ofSeconds(10)).until(() -> http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + process.httpPort() + "/health/ready")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
        }
    }
}
