package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.relay.PublishRecord;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;

/**
 * How the claim ({@link PostgresRelayStore#claim}) talks to pgjdbc: binary rows from its first
 * execution on a connection, except where the connection is set up for no named statements;
 * and which transactions the claim floor waits for ({@link PostgresRelayStore#outboxWriters}).
 */
class PostgresRelayStoreIT {
    @RegisterExtension
    static final TestPostgres DB = TestPostgres.perClass();

    static TxboxTables tables;
    static PostgresRelayStore store;
    static String outbox;

    @BeforeAll
    static void migrate() {
        tables = new TxboxTables(DB.schema(), "txbox_");
        TxboxMigrations.migrate(DB.dataSource(), tables);
        outbox = DB.qualified(tables.schema(), tables.outboxTable());
        store = new PostgresRelayStore(tables);
    }

    private static Instant insert(Connection c, String stepKey, byte[] payload) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("insert into " + outbox
                + " (step_key, original_key, destination, lane, payload) values (?, 'o', 'd', 1, ?) returning created_at")) {
            ps.setString(1, stepKey);
            ps.setBytes(2, payload);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getTimestamp(1).toInstant();
            }
        }
    }

    private static List<PublishRecord> claimOnce(Connection c) throws SQLException {
        c.setAutoCommit(false);
        store.prepareSession(c, Duration.ofSeconds(10));
        c.commit();
        List<PublishRecord> rows = store.claim(c, List.of((short) 1), 10, List.of()).rows();
        c.commit();
        return rows;
    }

    private static int namedStatementsOnClaim(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select count(*) from pg_prepared_statements where statement like '%"
                        + tables.outboxTable() + "%' and statement like '%fetch next%'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void claim_firstExecution_isANamedStatement_andDecodesTheRowAsStored() throws Exception {
        byte[] payload = {0, 1, 2, (byte) 0xff, 'x'};
        Instant createdAt;
        try (Connection c = DB.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            createdAt = insert(c, "binary-1", payload);
        }
        try (Connection c = DB.connection()) {
            List<PublishRecord> rows = claimOnce(c);
            assertThat(rows).singleElement().satisfies(r -> {
                assertThat(r.stepKey()).isEqualTo("binary-1");
                assertThat(r.payload()).containsExactly(payload);
                assertThat(r.createdAt()).isEqualTo(createdAt);
            });
            assertThat(namedStatementsOnClaim(c)).isEqualTo(1);
        }
    }

    @Test
    void claim_connectionWithPrepareThresholdZero_staysUnnamed() throws Exception {
        try (Connection c = DB.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "text-1", new byte[] {7});
        }
        try (Connection c = DB.connection()) {
            c.unwrap(PGConnection.class).setPrepareThreshold(0);
            assertThat(claimOnce(c)).singleElement().satisfies(r -> assertThat(r.payload()).containsExactly(7));
            assertThat(namedStatementsOnClaim(c)).isZero();
        }
    }

    @Test
    void outboxWriters_namesATransactionWithAnUncommittedRowUntilItEnds_notAReader() throws Exception {
        try (Connection relay = DB.dataSource().getConnection();
                Connection writer = DB.dataSource().getConnection();
                Connection reader = DB.dataSource().getConnection()) {
            reader.setAutoCommit(false);
            reader.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            try (Statement s = reader.createStatement()) {
                s.execute("select txid_current(), count(*) from " + outbox); // holds an xid and a snapshot
            }
            assertThat(store.outboxWriters(relay)).isEmpty();

            writer.setAutoCommit(false);
            insert(writer, "w-1", new byte[] {1});
            java.util.Set<String> during = store.outboxWriters(relay);
            assertThat(during).hasSize(1);

            writer.commit();
            insert(writer, "w-2", new byte[] {2}); // the same session's next transaction is another writer
            assertThat(store.outboxWriters(relay)).hasSize(1).doesNotContainAnyElementsOf(during);
            writer.rollback();
            reader.rollback();
            assertThat(store.outboxWriters(relay)).isEmpty();
        }
    }
}
