package io.txbox.saga;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.KafkaBroker;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Runs the whole saga in-process, as {@code sample-saga/run} does, with 100 orders and high
 * chaos, against the build's shared Kafka broker, RabbitMQ and the local PostgreSQL, then with
 * every service on the local MariaDB ({@code sample-saga/run --db mariadb}).
 */
class SagaIT {
    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void saga_withHighChaos_losesNothingAndDoesNothingTwice(String db) throws Exception {
        boolean mariadb = db.equals("mariadb");
        SagaSettings settings = new SagaSettings(100, 8, Chaos.HIGH,
                mariadb ? env("TXBOX_TEST_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test")
                        : env("TXBOX_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"),
                mariadb ? env("TXBOX_TEST_MARIADB_USER", "root") : env("TXBOX_TEST_JDBC_USER", "postgres"),
                mariadb ? env("TXBOX_TEST_MARIADB_PASSWORD", "") : env("TXBOX_TEST_JDBC_PASSWORD", ""),
                env("TXBOX_TEST_AMQP_URI", "amqp://guest:guest@127.0.0.1:5672/%2F"),
                KafkaBroker.shared().bootstrapServers(),
                Duration.ofSeconds(90), "sagait_" + db, Duration.ZERO);

        SagaReport report = new Saga(settings, System.out).run();
        System.out.println(report.line());

        assertThat(report.orders()).as("orders accepted").isEqualTo(100);
        assertThat(report.lost()).as("lost").isZero();
        assertThat(report.doubleEffects()).as("double effects").isZero();
        assertThat(report.figure("inconsistent")).as("orders whose end contradicts the ledger").isZero();
        assertThat(report.duplicateDeliveries()).as("duplicate deliveries absorbed").isPositive();
        assertThat(report.completed() + report.cancelled()).as("completed + cancelled").isEqualTo(100);
        assertThat(report.cancelled()).as("declined orders are cancelled").isEqualTo(report.figure("declined"));
        assertThat(report.verdict()).startsWith("PASS: 100 orders, 0 lost, 0 double effects, ");
    }
}
