package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.RetryableException;
import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.SqlErrors;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestMariaDb;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The MariaDB inbox SQL ({@link MariaDbInboxSql}) on a real MariaDB, before any store uses it:
 * receive is race-free with no SELECT before the INSERT, at InnoDB's default REPEATABLE READ and at
 * READ COMMITTED.
 */
class MariaDbInboxSqlIT {
    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass(12);

    static final int MAX_ATTEMPTS = 2;
    static final long LEASE_MICROS = 3_600_000_000L;

    static TxboxTables tables;
    static MariaDbInboxSql sql;

    @BeforeAll
    static void migrate() throws SQLException {
        tables = new TxboxTables(DB.schema(), "txbox_");
        TxboxMigrations.migrate(DB.dataSource(), tables);
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("create table effects (message_key varchar(255) primary key, runs int not null)");
            sql = new MariaDbInboxSql(tables, Dialect.of(c), MAX_ATTEMPTS, LEASE_MICROS);
        }
    }

    /** What receive told the caller, and what the entry holds. */
    record Seen(boolean first, String status, int attempts) {}

    static Seen receive(Connection c, String consumer, String key, byte[] fingerprint) throws SQLException {
        long token = ThreadLocalRandom.current().nextLong();
        try (PreparedStatement ps = c.prepareStatement(sql.receive)) {
            ps.setString(1, consumer);
            ps.setString(2, key);
            setBytes(ps, 3, fingerprint);
            ps.setLong(4, token);
            setBytes(ps, 5, fingerprint);
            setBytes(ps, 6, fingerprint);
            for (int i = 7; i <= 11; i++) {
                ps.setLong(i, token);
            }
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(sql.classify)) {
            ps.setLong(1, token);
            ps.setString(2, consumer);
            ps.setString(3, key);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return new Seen(rs.getInt(1) == 1, rs.getString(2), rs.getInt(8));
            }
        }
    }

    private static void setBytes(PreparedStatement ps, int i, byte[] value) throws SQLException {
        if (value == null) {
            ps.setNull(i, Types.VARBINARY);
        } else {
            ps.setBytes(i, value);
        }
    }

    /** Deadlocks and lock-wait timeouts met (and retried) by {@link #deliver}. */
    static final java.util.concurrent.atomic.AtomicInteger retries = new java.util.concurrent.atomic.AtomicInteger();

    /** One delivery: receive, and on FIRST the business effect, in one transaction. Retries a deadlock. */
    static boolean deliver(String isolation, String key) throws Exception {
        for (int attempt = 0; ; attempt++) {
            try (Connection c = DB.dataSource().getConnection()) {
                try (Statement st = c.createStatement()) {
                    st.execute("SET SESSION TRANSACTION ISOLATION LEVEL " + isolation);
                }
                c.setAutoCommit(false);
                try {
                    Seen seen = receive(c, "c", key, new byte[] {1});
                    if (seen.first()) {
                        try (PreparedStatement ps = c.prepareStatement(
                                "insert into effects values (?, 1) on duplicate key update runs = runs + 1")) {
                            ps.setString(1, key);
                            ps.executeUpdate();
                        }
                    }
                    c.commit();
                    return seen.first();
                } catch (SQLException e) {
                    c.rollback();
                    if (!(SqlErrors.translate("receive", e) instanceof RetryableException) || attempt > 20) {
                        throw e;
                    }
                    retries.incrementAndGet();
                } finally {
                    c.setAutoCommit(true);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"REPEATABLE READ", "READ COMMITTED"})
    void receive_concurrentDuplicates_exactlyOneFirstAndOneEffect(String isolation) throws Exception {
        String key = "dup-" + isolation.replace(' ', '-');
        int deliveries = 10;
        ExecutorService pool = Executors.newFixedThreadPool(deliveries);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Boolean>> results = new ArrayList<>();
            for (int i = 0; i < deliveries; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return deliver(isolation, key);
                }));
            }
            start.countDown();
            int firsts = 0;
            for (Future<Boolean> r : results) {
                firsts += r.get(60, TimeUnit.SECONDS) ? 1 : 0;
            }
            assertThat(firsts).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
        assertThat(runs(key)).isEqualTo(1);
    }

    /**
     * Neighbouring new keys at once, each delivered twice: every key runs its effect once. At
     * REPEATABLE READ InnoDB's gap locks may make a pair deadlock; the loser gets a
     * RetryableException (1213) and its retry is a plain delivery.
     */
    @ParameterizedTest
    @ValueSource(strings = {"REPEATABLE READ", "READ COMMITTED"})
    void receive_concurrentNeighbouringKeys_eachRunsOnce(String isolation) throws Exception {
        String prefix = "n-" + isolation.replace(' ', '-') + "-";
        int keys = 40;
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int round = 0; round < 2; round++) {
                for (int k = 0; k < keys; k++) {
                    String key = prefix + String.format("%03d", k);
                    results.add(pool.submit(() -> deliver(isolation, key)));
                }
            }
            int firsts = 0;
            for (Future<Boolean> r : results) {
                firsts += r.get(120, TimeUnit.SECONDS) ? 1 : 0;
            }
            assertThat(firsts).isEqualTo(keys);
        } finally {
            pool.shutdownNow();
        }
        for (int k = 0; k < keys; k++) {
            assertThat(runs(prefix + String.format("%03d", k))).isEqualTo(1);
        }
        org.slf4j.LoggerFactory.getLogger(MariaDbInboxSqlIT.class)
                .info("[{}] {} deliveries of {} keys: {} retried after a deadlock or lock-wait timeout so far",
                        isolation, 2 * keys, keys, retries.get());
    }

    @ParameterizedTest
    @ValueSource(strings = {"REPEATABLE READ", "READ COMMITTED"})
    void receive_duplicateWhileFirstIsOpen_waitsOnTheRowLockThenIsDuplicate(String isolation) throws Exception {
        String key = "wait-" + isolation.replace(' ', '-');
        assertThat(waitBehindFirst(isolation, key, true)).isEqualTo(new Seen(false, "COMPLETED", 1));
    }

    @ParameterizedTest
    @ValueSource(strings = {"REPEATABLE READ", "READ COMMITTED"})
    void receive_duplicateWhileFirstRollsBack_becomesFirst(String isolation) throws Exception {
        String key = "rollback-" + isolation.replace(' ', '-');
        assertThat(waitBehindFirst(isolation, key, false)).isEqualTo(new Seen(true, "COMPLETED", 1));
    }

    /** The first delivery stays open until the second is seen waiting for its lock; then it ends. */
    private static Seen waitBehindFirst(String isolation, String key, boolean commitFirst) throws Exception {
        try (Connection first = DB.connection(); Connection second = DB.connection()) {
            for (Connection c : List.of(first, second)) {
                try (Statement st = c.createStatement()) {
                    st.execute("SET SESSION TRANSACTION ISOLATION LEVEL " + isolation);
                }
                c.setAutoCommit(false);
            }
            // at REPEATABLE READ the second's snapshot is taken before the first commits
            try (Statement st = second.createStatement()) {
                st.executeQuery("select count(*) from effects").close();
            }
            assertThat(receive(first, "c", key, null).first()).isTrue();
            return DB.behindOpenTransaction(first, commitFirst, second, c -> receive(c, "c", key, null));
        }
    }

    @Test
    void receive_failedEntry_isTakenOverOnceWithAttemptsCounted() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + DB.qualified(tables.schema(), tables.inboxTable())
                    + " (consumer, message_key, status, attempts, failures) values ('c', 'failed-once', 'FAILED', 1, 1)");
            assertThat(receive(c, "c", "failed-once", null)).isEqualTo(new Seen(true, "COMPLETED", 2));
            assertThat(receive(c, "c", "failed-once", null)).isEqualTo(new Seen(false, "COMPLETED", 2));
        }
    }

    @Test
    void receive_expiredLease_isTakenOverButARunningOneIsNot() throws Exception {
        String inbox = DB.qualified(tables.schema(), tables.inboxTable());
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + inbox + " (consumer, message_key, status, attempts, lease_until) values"
                    + " ('c', 'expired', 'PROCESSING', 1, current_timestamp(6) - interval 1 second),"
                    + " ('c', 'running', 'PROCESSING', 1, current_timestamp(6) + interval 1 hour)");
            assertThat(receive(c, "c", "expired", null)).isEqualTo(new Seen(true, "COMPLETED", 2));
            assertThat(receive(c, "c", "running", null)).isEqualTo(new Seen(false, "PROCESSING", 1));
        }
    }

    @Test
    void receive_otherFingerprintOnRetryableEntry_isNotTakenOver() throws Exception {
        String inbox = DB.qualified(tables.schema(), tables.inboxTable());
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + inbox + " (consumer, message_key, status, attempts, fingerprint) values"
                    + " ('c', 'fp', 'FAILED', 1, x'01')");
            assertThat(receive(c, "c", "fp", new byte[] {2})).isEqualTo(new Seen(false, "FAILED", 1));
            assertThat(receive(c, "c", "fp", new byte[] {1})).isEqualTo(new Seen(true, "COMPLETED", 2));
        }
    }

    @Test
    void receive_keysDifferingInCaseOrTrailingSpace_areDifferentEntries() throws Exception {
        try (Connection c = DB.connection()) {
            assertThat(receive(c, "c", "case", null).first()).isTrue();
            assertThat(receive(c, "c", "CASE", null).first()).isTrue();
            assertThat(receive(c, "c", "case ", null).first()).isTrue();
            assertThat(receive(c, "c", "case", null).first()).isFalse();
        }
    }


    /** What a two-phase claim left: whether it is this caller's, and the fencing token. */
    record Claimed(boolean mine, String status, int attempts, int failures, Long leaseMicros, String lastError) {}

    static Claimed claim(Connection c, String key) throws SQLException {
        long token = ThreadLocalRandom.current().nextLong();
        try (PreparedStatement ps = c.prepareStatement(sql.claim)) {
            ps.setString(1, "c");
            ps.setString(2, key);
            ps.setNull(3, Types.VARBINARY);
            ps.setLong(4, token);
            ps.setNull(5, Types.VARBINARY);
            ps.setNull(6, Types.VARBINARY);
            for (int i = 7; i <= 12; i++) {
                ps.setLong(i, token);
            }
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(sql.classifyClaim)) {
            ps.setLong(1, token);
            ps.setString(2, "c");
            ps.setString(3, key);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                long micros = rs.getLong(5);
                Long lease = rs.wasNull() ? null : micros;
                return new Claimed(rs.getInt(1) == 1, rs.getString(2), rs.getInt(3), rs.getInt(4), lease, rs.getString(6));
            }
        }
    }

    static int complete(Connection c, String key, Claimed claimed) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.complete)) {
            ps.setBytes(1, new byte[] {42});
            ps.setString(2, "c");
            ps.setString(3, key);
            ps.setInt(4, claimed.attempts());
            ps.setLong(5, claimed.leaseMicros());
            return ps.executeUpdate();
        }
    }

    private static void expireLease(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("update " + DB.qualified(tables.schema(), tables.inboxTable())
                + " set lease_until = current_timestamp(6) - interval 1 second where consumer = 'c' and message_key = ?")) {
            ps.setString(1, key);
            ps.executeUpdate();
        }
    }

    @Test
    void claim_leaseInDatabaseTime_fencesTheWorkerWhoseLeaseWasTakenOver() throws Exception {
        try (Connection c = DB.connection(); Statement st = c.createStatement()) {
            st.execute("SET time_zone = '+05:00'"); // the fencing token must not depend on the session's zone
            Claimed first = claim(c, "two-phase");
            assertThat(first.mine()).isTrue();
            assertThat(first.status()).isEqualTo("PROCESSING");
            assertThat(first.attempts()).isEqualTo(1);
            long nowMicros;
            try (ResultSet rs = st.executeQuery("select cast(unix_timestamp(current_timestamp(6)) * 1000000 as signed)")) {
                rs.next();
                nowMicros = rs.getLong(1);
            }
            assertThat(first.leaseMicros() - nowMicros).isBetween(LEASE_MICROS - 60_000_000L, LEASE_MICROS);

            Claimed whileLeased = claim(c, "two-phase");
            assertThat(whileLeased.mine()).isFalse();
            assertThat(whileLeased.attempts()).isEqualTo(1);

            expireLease(c, "two-phase");
            Claimed takeover = claim(c, "two-phase");
            assertThat(takeover).extracting(Claimed::mine, Claimed::status, Claimed::attempts, Claimed::failures)
                    .containsExactly(true, "PROCESSING", 2, 1);

            assertThat(complete(c, "two-phase", first)).as("the first worker lost its lease").isZero();
            assertThat(complete(c, "two-phase", takeover)).isEqualTo(1);
            assertThat(claim(c, "two-phase")).extracting(Claimed::mine, Claimed::status).containsExactly(false, "COMPLETED");
        }
    }

    @Test
    void claim_expiredLeaseThatUsesUpTheAttempts_parksTheEntryAsDead() throws Exception {
        try (Connection c = DB.connection()) {
            assertThat(claim(c, "crashes").mine()).isTrue();
            expireLease(c, "crashes");
            assertThat(claim(c, "crashes").failures()).isEqualTo(1);
            expireLease(c, "crashes");
            Claimed parked = claim(c, "crashes");
            assertThat(parked).extracting(Claimed::mine, Claimed::status, Claimed::attempts, Claimed::failures,
                    Claimed::leaseMicros).containsExactly(true, "DEAD", 2, 2, null);
            assertThat(parked.lastError()).isEqualTo("lease expired on attempt 2, failure 2 of 2; last error: none");
            assertThat(claim(c, "crashes").mine()).isFalse();
        }
    }

    private static int runs(String key) throws SQLException {
        try (Connection c = DB.connection(); PreparedStatement ps = c.prepareStatement(
                "select runs from effects where message_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        }
    }
}
