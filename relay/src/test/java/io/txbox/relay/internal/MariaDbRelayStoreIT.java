package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.time.Duration;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What only MariaDB needs proving about the relay's claim ({@link MariaDbRelayStore#claim}): it
 * locks no row and no gap, so it holds no send back at either isolation level; and a worker's lane
 * lock waits for no other worker's lanes. The relay as a whole runs on both
 * databases in the relay suites.
 */
class MariaDbRelayStoreIT {
    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass();

    static TxboxTables tables;
    static MariaDbRelayStore store;
    static String outbox;

    @BeforeAll
    static void migrate() throws SQLException {
        tables = new TxboxTables(DB.schema(), "txbox_");
        TxboxMigrations.migrate(DB.dataSource(), tables);
        outbox = DB.qualified(tables.schema(), tables.outboxTable());
        try (Connection c = DB.connection()) {
            store = new MariaDbRelayStore(tables, Dialect.of(c));
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

    private static List<String> claim(Connection c, List<Integer> lanes, int limit, String... skip) throws SQLException {
        List<Short> l = lanes.stream().map(Integer::shortValue).toList();
        return store.claim(c, l, limit, List.of(skip)).rows().stream().map(r -> r.stepKey()).toList();
    }

    private static Connection claimer() throws SQLException {
        Connection c = DB.connection();
        c.setAutoCommit(false);
        store.prepareSession(c, Duration.ofSeconds(10));
        c.commit();
        return c;
    }

    @Test
    void claim_takesTheLanesDueRowsInIdOrder_andLocksNoneOfThem() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "a1", 1, "0 second");
            insert(c, "b1", 2, "0 second");
            insert(c, "a2", 1, "0 second");
            insert(c, "later", 1, "1 hour");
            insert(c, "other-lane", 3, "0 second");
            insert(c, "a3", 1, "0 second");
        }
        // the locked lanes make a worker the only claimant, so a second claim of the same lanes reads the same rows at once
        try (Connection one = claimer(); Connection two = claimer()) {
            assertThat(claim(one, List.of(1, 2), 2)).containsExactly("a1", "b1");
            assertThat(claim(two, List.of(1, 2), 10)).containsExactly("a1", "b1", "a2", "a3");
            one.rollback();
            two.rollback();
        }
    }

    /**
     * The claim is a plain read: at the relay's READ COMMITTED and at InnoDB's default REPEATABLE
     * READ alike, it locks no gap a send would wait for.
     */
    @ParameterizedTest
    @ValueSource(ints = {Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ})
    void claim_openAtEitherIsolationLevel_letsSendsInsertWithoutWaiting(int isolation) throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "due", 5, "0 second");
        }
        try (Connection relay = claimer(); Connection app = DB.connection()) {
            relay.setTransactionIsolation(isolation);
            assertThat(claim(relay, List.of(5), 10)).containsExactly("due");
            insert(app, "sent-meanwhile", 5, "0 second"); // autocommit: returns only when not blocked
            relay.commit();
        }
    }

    @Test
    void claim_pausedDestination_leavesItsRowsAndTakesTheOthers() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + outbox);
            insert(c, "d-row", 7, "0 second");
            try (PreparedStatement ps = c.prepareStatement("insert into " + outbox
                    + " (step_key, original_key, destination, lane, payload) values ('e-row', 'o', 'e', 7, x'00')")) {
                ps.executeUpdate();
            }
        }
        try (Connection relay = claimer()) {
            assertThat(claim(relay, List.of(7), 10, "d")).containsExactly("e-row");
            relay.rollback();
        }
    }

    /**
     * A worker locks its own lanes by primary key: another worker's lanes, locked for the whole of
     * its batch, hold it up for no time. A scan of the lane table would wait for them until this
     * session's lock wait limit (here 1 s), which made every worker wait for the others' commits.
     */
    @Test
    void lockLanes_anotherWorkersLanesLockedMidBatch_locksItsOwnWithoutWaiting() throws Exception {
        String lanes = DB.qualified(tables.schema(), tables.relayLaneTable());
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + lanes);
            st.execute("insert into " + lanes + " (lane, owner, fence, lease_until) select seq, if(seq < 4, 'w-a', 'w-b'), 1,"
                    + " current_timestamp(6) + interval 1 minute from seq_0_to_7");
        }
        Map<Short, Long> a = Map.of((short) 0, 1L, (short) 1, 1L, (short) 2, 1L, (short) 3, 1L);
        Map<Short, Long> b = Map.of((short) 4, 1L, (short) 5, 1L, (short) 6, 1L, (short) 7, 1L);
        try (Connection first = claimer(); Connection second = DB.connection()) {
            assertThat(store.lanes().lockLanes(first, "w-a", a, false, Duration.ofSeconds(10)).held()).containsOnlyKeys(a.keySet());
            second.setAutoCommit(false);
            store.prepareSession(second, Duration.ofSeconds(1));
            second.commit();
            // the first worker's batch is still open
            assertThat(store.lanes().lockLanes(second, "w-b", b, false, Duration.ofSeconds(1)).held())
                    .containsOnlyKeys(b.keySet());
            second.commit();
            first.commit();
        }
    }

    /**
     * The heartbeat renews this member, drops the expired ones and counts the live ones besides
     * this relay's own workers; a member renewed meanwhile is not dropped.
     */
    @Test
    void heartbeat_expiredAndLiveMembers_dropsOnlyTheExpiredAndCountsTheLive() throws Exception {
        String members = DB.qualified(tables.schema(), tables.relayMemberTable());
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("delete from " + members);
            st.execute("insert into " + members + " (member_id, lease_until) values"
                    + " ('gone-a', current_timestamp(6) - interval 1 minute),"
                    + " ('gone-b', current_timestamp(6) - interval 1 second),"
                    + " ('other', current_timestamp(6) + interval 1 minute)");
        }
        try (Connection c = claimer()) {
            assertThat(store.lanes().heartbeat(c, "me-w0", List.of("me-w0", "me-w1"), Duration.ofSeconds(30)))
                    .as("the other live member and this relay's two workers").isEqualTo(3);
            c.commit();
        }
        List<String> left = new ArrayList<>();
        try (Connection c = DB.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select member_id from " + members + " order by member_id")) {
            while (rs.next()) {
                left.add(rs.getString(1));
            }
        }
        assertThat(left).containsExactly("me-w0", "other");
    }

    @Test
    void resetSession_restoresTheServersIsolationLevel() throws Exception {
        try (Connection c = claimer()) {
            assertThat(c.getTransactionIsolation()).isEqualTo(Connection.TRANSACTION_READ_COMMITTED);
            store.resetSession(c);
            c.commit();
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("select @@tx_isolation = @@global.tx_isolation,"
                    + " @@innodb_lock_wait_timeout = @@global.innodb_lock_wait_timeout,"
                    + " @@max_statement_time = @@global.max_statement_time")) {
                rs.next();
                assertThat(rs.getBoolean(1)).isTrue();
                assertThat(rs.getBoolean(2)).isTrue();
                assertThat(rs.getBoolean(3)).isTrue();
            }
        }
    }
}
