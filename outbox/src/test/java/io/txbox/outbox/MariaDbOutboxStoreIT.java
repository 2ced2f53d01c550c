package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What only MariaDB needs proving about the outbox send ({@link MariaDbOutboxStore}): a concurrent
 * send of the same step key waits for the first transaction, then is a no-op or writes the row.
 * The rest of the outbox runs on both databases in {@link OutboxIT}.
 */
class MariaDbOutboxStoreIT {
    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass();

    static TxboxTables tables;
    static Outbox outbox;

    @BeforeAll
    static void migrate() {
        tables = new TxboxTables(DB.schema(), "txbox_");
        TxboxMigrations.migrate(DB.dataSource(), tables);
        outbox = Outbox.builder().tables(tables).build();
    }

    static boolean send(Connection c, String original) {
        return outbox.send(c, OutboxMessage.builder(StepKey.of(original, "pay"), "orders").routingKey(original)
                .payload(new byte[] {1, 2, 3}).header("h", "v").build());
    }

    @Test
    void send_concurrentDuplicate_waitsForTheFirstThenIsNotEmitted() throws Exception {
        assertThat(sendBehindOpenFirst("c", true)).isFalse();
        assertThat(rows("c:pay")).isEqualTo(1);
    }

    @Test
    void send_concurrentDuplicateOfARolledBackSend_isEmitted() throws Exception {
        assertThat(sendBehindOpenFirst("r", false)).isTrue();
        assertThat(rows("r:pay")).isEqualTo(1);
    }

    @Test
    void send_duplicateInTheSameTransaction_leavesTheTransactionUsable() throws Exception {
        try (Connection c = DB.connection()) {
            c.setAutoCommit(false);
            assertThat(send(c, "t")).isTrue();
            assertThat(send(c, "t")).isFalse();
            assertThat(send(c, "u")).isTrue();
            c.commit();
        }
        assertThat(rows("t:pay")).isEqualTo(1);
        assertThat(rows("u:pay")).isEqualTo(1);
    }

    private static boolean sendBehindOpenFirst(String original, boolean commitFirst) throws Exception {
        try (Connection first = DB.connection(); Connection second = DB.connection()) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            assertThat(send(first, original)).isTrue();
            return DB.behindOpenTransaction(first, commitFirst, second, c -> send(c, original));
        }
    }

    private static int rows(String stepKey) throws SQLException {
        try (Connection c = DB.connection(); PreparedStatement ps = c.prepareStatement(
                "select count(*) from " + DB.qualified(tables.schema(), tables.outboxTable()) + " where step_key = ?")) {
            ps.setString(1, stepKey);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
