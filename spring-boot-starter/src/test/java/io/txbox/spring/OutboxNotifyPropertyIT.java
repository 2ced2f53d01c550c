package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.internal.WakeChannel;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code txbox.outbox.notify-relays} reaches the outbox bean: turned off, its sends wake no relay. */
class OutboxNotifyPropertyIT {
    // PostgreSQL only: the wake-up is a NOTIFY, which MariaDB does not have
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    private static void sendAndCommit(Outbox outbox, String key) throws Exception {
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            outbox.send(c, OutboxMessage.builder(StepKey.of(key, "step"), "events").routingKey("r").payload("p").build());
            c.commit();
        }
    }

    @Test
    void notifyRelaysFalse_outboxBeanSendsNoWakeUp() throws Exception {
        TxboxTables tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        DataSource ds = PG.dataSource();
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class))
                .withPropertyValues("txbox.migrations=none", "txbox.schema=" + PG.schema(), "txbox.outbox.notify-relays=false")
                .withBean(DataSource.class, () -> ds)
                .run(context -> {
                    try (Connection listener = ds.getConnection(); Statement s = listener.createStatement()) {
                        listener.setAutoCommit(true);
                        s.execute(WakeChannel.listenSql(tables));
                        PGConnection pg = listener.unwrap(PGConnection.class);
                        sendAndCommit(context.getBean(Outbox.class), "quiet");
                        // committed after the quiet one: its notification comes last, any earlier one first
                        sendAndCommit(Outbox.builder().tables(tables).build(), "sentinel");
                        List<PGNotification> received = new ArrayList<>();
                        await().atMost(Duration.ofSeconds(10)).until(() -> {
                            PGNotification[] n = pg.getNotifications(100);
                            received.addAll(n == null ? List.of() : List.of(n));
                            return !received.isEmpty();
                        });
                        assertThat(received).as("only the sentinel's send notified").hasSize(1);
                    }
                });
    }
}
