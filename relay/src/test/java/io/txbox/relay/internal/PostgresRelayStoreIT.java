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
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;

/**
 * What only PostgreSQL needs proving about the relay's session: how the claim ({@link
 * PostgresRelayStore#claim}) talks to pgjdbc (binary rows from its first execution on a
 * connection, except where the connection is set up for no named statements), and that its claims
 * keep using the primary key when a backlog arrives in an outbox whose statistics say it is empty.
 * The relay as a whole runs on both databases in the relay suites.
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
    void claim_ofABacklogAfterPollingAnOutboxAnalyzedEmpty_readsThePrimaryKeyNotTheWholeTable() throws Exception {
        try (Connection admin = DB.connection(); Statement st = admin.createStatement()) {
            st.execute("delete from " + outbox);
            st.execute("vacuum analyze " + outbox); // the statistics now say: empty
        }
        List<Short> lanes = IntStream.range(0, 32).mapToObj(i -> (short) i).toList();
        try (Connection c = DB.connection()) {
            c.setAutoCommit(false);
            store.prepareSession(c, Duration.ofSeconds(10));
            c.commit();
            // an idle relay polls: the driver prepares the statements on the server, which may settle on one plan for them
            for (int i = 0; i < 12; i++) {
                assertThat(store.claim(c, lanes, 100, List.of()).rows()).isEmpty();
                assertThat(store.claimAfter(c, lanes, 100, List.of(), 1).rows()).isEmpty();
                c.commit();
            }
            try (Connection writer = DB.connection(); Statement st = writer.createStatement()) {
                st.execute("insert into " + outbox + " (step_key, original_key, destination, lane, payload)"
                        + " select 's' || g, 'o', 'd', g % 64, decode(repeat('00', 400), 'hex') from generate_series(1, 20000) g");
            }
            assertThat(store.claim(c, lanes, 100, List.of()).rows()).hasSize(100);
            assertThat(store.claimAfter(c, lanes, 100, List.of(), 1).rows()).hasSize(100);
            // this transaction's own counts: a sequential scan would read all 20,000 rows for 100
            try (PreparedStatement ps = c.prepareStatement(
                    "select seq_scan, coalesce(idx_scan, 0) from pg_stat_xact_user_tables where relid = ?::regclass")) {
                ps.setString(1, outbox);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getLong(1)).as("sequential scans of the outbox").isZero();
                    assertThat(rs.getLong(2)).as("primary key scans of the outbox").isPositive();
                }
            }
            c.rollback();
            store.resetSession(c);
        } finally {
            try (Connection admin = DB.connection(); Statement st = admin.createStatement()) {
                st.execute("delete from " + outbox);
            }
        }
    }
}
