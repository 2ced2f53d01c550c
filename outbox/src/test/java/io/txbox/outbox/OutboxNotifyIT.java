package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.internal.WakeChannel;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * On PostgreSQL a send wakes the listening relays with a NOTIFY on its outbox table's channel,
 * delivered at commit; rows for change data capture, and an outbox built without {@code
 * notifyRelays}, never notify.
 */
class OutboxNotifyIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static TxboxTables tables;

    @BeforeAll
    static void migrate() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
    }

    static OutboxMessage message(String key, String destination) {
        return OutboxMessage.builder(StepKey.of(key, "step"), destination).routingKey("r").payload("p").build();
    }

    static void sendAndCommit(Outbox outbox, OutboxMessage... messages) throws Exception {
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            outbox.sendAll(c, List.of(messages));
            c.commit();
        }
    }

    @Test
    void send_committed_notifiesOnceOnTheTablesChannel_capturedAndSilencedSendsNever() throws Exception {
        try (Connection listener = PG.dataSource().getConnection(); Statement s = listener.createStatement()) {
            listener.setAutoCommit(true);
            s.execute(WakeChannel.listenSql(tables));
            PGConnection pg = listener.unwrap(PGConnection.class);
            // committed first, so their notifications, if any, would arrive before the last one
            sendAndCommit(Outbox.builder().tables(tables).changeDataCapture().build(), message("cdc", "events"));
            sendAndCommit(Outbox.builder().tables(tables).notifyRelays(false).build(), message("quiet", "events"));
            sendAndCommit(Outbox.builder().tables(tables).build(), message("a", "events"), message("b", "events"));

            List<PGNotification> received = new ArrayList<>();
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                PGNotification[] n = pg.getNotifications(100);
                received.addAll(n == null ? List.of() : List.of(n));
                return !received.isEmpty();
            });
            assertThat(received).as("one per committed transaction that sent for a relay").hasSize(1);
            assertThat(received.get(0).getName()).isEqualTo(PG.schema() + ".txbox_outbox");
        }
    }

    @Test
    void channel_longSchemaAndPrefix_staysWithinPostgresLimitAndDistinct() {
        String schema = "s".repeat(TxboxTables.MAX_SCHEMA_LENGTH);
        String a = WakeChannel.of(new TxboxTables(schema, "p".repeat(TxboxTables.MAX_PREFIX_LENGTH)));
        String b = WakeChannel.of(new TxboxTables(schema.substring(1) + "t", "p".repeat(TxboxTables.MAX_PREFIX_LENGTH)));
        assertThat(a).hasSizeLessThanOrEqualTo(63).isNotEqualTo(b);
    }
}
