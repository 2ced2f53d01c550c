package io.txbox.inbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.KeyReuseException;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class MicrometerInboxListenerIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @Test
    void outcomes_areCountedPerConsumerAndOutcome() throws Exception {
        TxboxTables tables = new TxboxTables(PG.schema(), "txbox_");
        TxboxMigrations.migrate(PG.dataSource(), tables);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Inbox inbox = Inbox.builder("payments").tables(tables).maxAttempts(1)
                .listener(new MicrometerInboxListener(registry)).build();
        byte[] a = "a".getBytes(StandardCharsets.UTF_8);

        inbox.process(PG.dataSource(), InboundMessage.of("k1", a), (tx, m) -> null);
        inbox.process(PG.dataSource(), InboundMessage.of("k1", a), (tx, m) -> null);
        inbox.process(PG.dataSource(), InboundMessage.of("k2", a), (tx, m) -> {
            throw new IllegalStateException("boom");
        });
        try (Connection tx = PG.dataSource().getConnection()) {
            tx.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.receive(tx, InboundMessage.of("k1", "other".getBytes(StandardCharsets.UTF_8))))
                    .isInstanceOf(KeyReuseException.class);
            tx.rollback();
        }

        assertThat(count(registry, "first")).isEqualTo(1);
        assertThat(count(registry, "duplicate")).isEqualTo(1);
        assertThat(count(registry, "failed") + count(registry, "dead")).isEqualTo(1);
        assertThat(count(registry, "mismatch")).isEqualTo(1);
    }

    @Test
    void constructor_nullRegistry_isRejected() {
        assertThatThrownBy(() -> new MicrometerInboxListener(null)).hasMessageContaining("registry");
    }

    private static double count(SimpleMeterRegistry registry, String outcome) {
        var c = registry.find(MicrometerInboxListener.OUTCOMES).tag("consumer", "payments").tag("outcome", outcome).counter();
        return c == null ? 0 : c.count();
    }
}
