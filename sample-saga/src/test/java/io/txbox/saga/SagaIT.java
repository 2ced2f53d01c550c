package io.txbox.saga;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.KafkaBroker;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Runs the whole saga in-process, as {@code sample-saga/run} does, with 100 orders and high
 * chaos, against the build's shared Kafka broker, the local PostgreSQL and RabbitMQ.
 */
class SagaIT {
    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    @Test
    void saga_withHighChaos_losesNothingAndDoesNothingTwice() throws Exception {
        SagaSettings settings = new SagaSettings(100, 8, Chaos.HIGH,
                env("TXBOX_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"),
                env("TXBOX_TEST_JDBC_USER", "postgres"),
                env("TXBOX_TEST_JDBC_PASSWORD", ""),
                env("TXBOX_TEST_AMQP_URI", "amqp://guest:guest@127.0.0.1:5672/%2F"),
                KafkaBroker.shared().bootstrapServers(),
                Duration.ofSeconds(90), "sagait", Duration.ZERO);

        SagaReport report = new Saga(settings, System.out).run();
        System.out.println(report.line());

        assertThat(report.orders()).as("orders accepted").isEqualTo(100);
        assertThat(report.lost()).as("lost").isZero();
        assertThat(report.doubleEffects()).as("double effects").isZero();
        assertThat(report.figure("inconsistent")).as("orders whose end contradicts the ledger").isZero();
        assertThat(report.duplicateDeliveries()).as("duplicate deliveries absorbed").isPositive();
        assertThat(report.completed() + report.cancelled()).as("completed + cancelled").isEqualTo(100);
        assertThat(report.cancelled()).as("declined orders are cancelled").isEqualTo(report.figure("declined"));
    }
}
