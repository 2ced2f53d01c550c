package io.txbox.relay.internal;

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
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The MariaDB relay claim ({@link MariaDbClaimSql}) on a real MariaDB, before any store uses it. */
class MariaDbClaimSqlIT {
    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass();

    static TxboxTables tables;
    static MariaDbClaimSql sql;
    static String outbox;

    @BeforeAll
    static void migrate() throws SQLException {
        tables = new TxboxTables(DB.schema(), "txbox_");
        TxboxMigrations.migrate(DB.dataSource(), tables);
        outbox = DB.qualified(tables.schema(), tables.outboxTable());
        try (Connection c = DB.connection()) {
            sql = new MariaDbClaimSql(tables, Dialect.of(c));
        }
    }

    private static void insert(Connection c, String stepKey, int lane, String availableIn) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("insert into " + outbox
                + " (step_key, original_key, destination, lane, payload, available_at)"
                + " values (?, 'o', 'd', ?, x'00', current_timestamp(6) + interval " + availableIn + ")")) {
            ps.setString(1, stepKey);
            ps.setInt(2, lane);
            ps.executeUpdate();
        }
    }

    private static List<String> claim(Connection c, String lanes, int limit) throws SQLException {
        List<String> keys = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql.claim)) {
            ps.setString(1, lanes);
            ps.setInt(2, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getString(2));
                }
            }
        }
        return keys;
    }

    private static Connection claimer() throws SQLException {
        Connection c = DB.connection();
        try (Statement st = c.createStatement()) {
            st.execute(MariaDbClaimSql.READ_COMMITTED);
        }
        c.setAutoCommit(false);
        return c;
    }

    @Test
    void claim_twoRelays_takeDisjointRowsInIdOrderWithoutWaiting() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "a1", 1, "0 second");
            insert(c, "b1", 2, "0 second");
            insert(c, "a2", 1, "0 second");
            insert(c, "later", 1, "1 hour");
            insert(c, "other-lane", 3, "0 second");
            insert(c, "a3", 1, "0 second");
        }
        try (Connection one = claimer(); Connection two = claimer()) {
            assertThat(claim(one, "[1,2]", 2)).containsExactly("a1", "b1");
            assertThat(claim(two, "[1,2]", 10)).containsExactly("a2", "a3");
            one.rollback();
            two.rollback();
        }
    }

    @Test
    void claim_openAtReadCommitted_letsSendsInsertWithoutWaiting() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "due", 5, "0 second");
        }
        try (Connection relay = claimer(); Connection app = DB.connection()) {
            assertThat(claim(relay, "[5]", 10)).containsExactly("due");
            insert(app, "sent-meanwhile", 5, "0 second"); // autocommit: returns only when not blocked
            relay.commit();
        }
    }

    /** The documented reason for READ COMMITTED: at REPEATABLE READ the claim's gap locks hold sends back. */
    @Test
    void claim_openAtRepeatableRead_holdsSendsBackUntilItEnds() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "due-rr", 6, "0 second");
        }
        try (Connection relay = DB.connection(); Connection app = DB.connection()) {
            try (Statement st = relay.createStatement()) {
                st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
            }
            relay.setAutoCommit(false);
            app.setAutoCommit(false);
            assertThat(claim(relay, "[6]", 10)).containsExactly("due-rr");
            DB.behindOpenTransaction(relay, true, app, c -> {
                insert(c, "held-back", 6, "0 second");
                return null;
            });
        }
    }

}
