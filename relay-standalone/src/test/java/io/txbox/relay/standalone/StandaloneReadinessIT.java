package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** The standalone relay's readiness probe names a RabbitMQ exchange that does not exist, on either database. */
class StandaloneReadinessIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static Connection admin;
    static Channel ch;

    @BeforeAll
    static void setUp() throws Exception {
        for (TestDatabase db : DBS.all()) {
            TxboxMigrations.migrate(db.dataSource(), TxboxTables.inSchema(db.schema()));
        }
        admin = RABBIT.newConnection();
        ch = admin.createChannel();
    }

    @AfterAll
    static void tearDown() throws Exception {
        admin.close();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void missingExchange_standaloneReadiness_isDownNamingTheExchange(TestDatabase db) throws Exception {
        // one exchange per database: the first run declares its own
        String missing = RABBIT.name("absent-" + db.kind().name().toLowerCase(java.util.Locale.ROOT));
        RelayConfig config = RelayConfig.load(null, Map.of(
                "TXBOX_JDBC_URL", db.jdbcUrl(),
                "TXBOX_JDBC_USER", db.user(),
                "TXBOX_JDBC_PASSWORD", db.password(),
                "TXBOX_SCHEMA", db.schema(),
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
