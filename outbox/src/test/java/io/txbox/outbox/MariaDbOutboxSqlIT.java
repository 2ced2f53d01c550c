package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The MariaDB outbox send ({@link MariaDbOutboxSql}) on a real MariaDB, before any store uses it. */
class MariaDbOutboxSqlIT {
    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass();

    static TxboxTables tables;
    static MariaDbOutboxSql sql;

    @BeforeAll
    static void migrate() throws SQLException {
        tables = new TxboxTables(DB.schema(), "txbox_");
        TxboxMigrations.migrate(DB.dataSource(), tables);
        try (Connection c = DB.connection()) {
            sql = new MariaDbOutboxSql(tables, Dialect.of(c));
        }
    }

    static boolean send(Connection c, String stepKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.send)) {
            ps.setString(1, stepKey);
            ps.setString(2, "order-1");
            ps.setString(3, "orders");
            ps.setString(4, "order-1");
            ps.setShort(5, (short) 7);
            ps.setBytes(6, new byte[] {1, 2, 3});
            ps.setString(7, "[\"idempotency-key\"]");
            ps.setString(8, "[\"" + stepKey + "\"]");
            ps.setString(9, "application/json");
            ps.setNull(10, Types.VARCHAR);
            ps.setNull(11, Types.VARCHAR);
            ps.setNull(12, Types.TIMESTAMP);
            ps.setLong(13, 0);
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            if (sql.isDuplicateStepKey(e)) {
                return false;
            }
            throw e;
        }
    }

    @Test
    void send_duplicateStepKey_isNotEmittedAndTheTransactionGoesOn() throws Exception {
        try (Connection c = DB.connection()) {
            c.setAutoCommit(false);
            assertThat(send(c, "k:pay")).isTrue();
            assertThat(send(c, "k:pay")).isFalse();
            assertThat(send(c, "k:ship")).isTrue();
            c.commit();
        }
        assertThat(rows("k:pay")).isEqualTo(1);
        assertThat(rows("k:ship")).isEqualTo(1);
    }

    @Test
    void send_concurrentDuplicate_waitsForTheFirstThenIsNotEmitted() throws Exception {
        assertThat(sendBehindOpenFirst("c:pay", true)).isFalse();
        assertThat(rows("c:pay")).isEqualTo(1);
    }

    @Test
    void send_concurrentDuplicateOfARolledBackSend_isEmitted() throws Exception {
        assertThat(sendBehindOpenFirst("r:pay", false)).isTrue();
        assertThat(rows("r:pay")).isEqualTo(1);
    }

    private static boolean sendBehindOpenFirst(String stepKey, boolean commitFirst) throws Exception {
        try (Connection first = DB.connection(); Connection second = DB.connection()) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            assertThat(send(first, stepKey)).isTrue();
            return DB.behindOpenTransaction(first, commitFirst, second, c -> send(c, stepKey));
        }
    }

    @Test
    void send_valueTooLong_failsInsteadOfTruncating() throws Exception {
        try (Connection c = DB.connection()) {
            String tooLong = "k".repeat(256);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> send(c, tooLong))
                    .isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(sql.isDuplicateStepKey((SQLException) e)).isFalse());
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
