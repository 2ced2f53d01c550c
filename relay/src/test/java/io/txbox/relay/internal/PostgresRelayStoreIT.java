package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What only PostgreSQL needs proving about the relay's session: its claims keep using the primary
 * key when a backlog arrives in an outbox whose statistics say it is empty. The relay as a whole
 * runs on both databases in the relay suites.
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
