package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.RetryableException;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A concurrent duplicate at each isolation level. PostgreSQL: READ COMMITTED answers DUPLICATE;
 * REPEATABLE READ and SERIALIZABLE answer with a retryable error, never FIRST. MariaDB: the
 * duplicate waits on the row lock and answers DUPLICATE at every level, its default REPEATABLE
 * READ included, since the write and the read after it are locking reads of the latest row.
 */
class InboxIsolationIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(12);

    private TestDatabase db;
    private Rows rows;
    private Inbox inbox;

    private void use(TestDatabase db) {
        this.db = db;
        rows = Rows.of(db);
        inbox = Inbox.builder("isolation").tables(rows.tables).build();
        rows.execute("create table if not exists " + rows.table("business") + " (message_key " + rows.text()
                + " not null)");
    }

    /** Each database at each isolation level. */
    static Stream<Arguments> levels() {
        return DBS.all().stream().flatMap(db -> Stream.of(Connection.TRANSACTION_READ_COMMITTED,
                        Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE)
                .map(level -> Arguments.of(Named.of(db.kind().toString(), db), Named.of(levelName(level), level))));
    }

    private static String levelName(int level) {
        return switch (level) {
            case Connection.TRANSACTION_READ_COMMITTED -> "READ COMMITTED";
            case Connection.TRANSACTION_REPEATABLE_READ -> "REPEATABLE READ";
            default -> "SERIALIZABLE";
        };
    }

    private Connection begin(int isolation) throws SQLException {
        Connection c = db.connection();
        c.setTransactionIsolation(isolation);
        c.setAutoCommit(false);
        return c;
    }

    /** The server's id of the session, read before its transaction so no snapshot is taken yet. */
    private long session(Connection c) throws SQLException {
        if (!rows.postgres()) {
            return DBS.mariadb().connectionId(c);
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** Waits until session {@code id} is blocked on a lock, i.e. on the other delivery's entry. */
    private void awaitBlocked(long id) {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() -> blocked(id));
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("levels")
    void receive_concurrentDuplicateAfterFirstCommits_isDuplicateOrRetryableNeverFirst(TestDatabase db, int isolation)
            throws Exception {
        use(db);
        InboundMessage m = InboundMessage.of("race-" + isolation, new byte[] {1});
        try (Connection first = begin(isolation); Connection second = db.connection()) {
            long secondPid = session(second);
            second.setTransactionIsolation(isolation);
            second.setAutoCommit(false);
            assertThat(inbox.receive(first, m).isFirst()).isTrue();

            CompletableFuture<Receipt> waiting = CompletableFuture.supplyAsync(() -> inbox.receive(second, m));
            awaitBlocked(secondPid);
            first.commit();

            if (isolation == Connection.TRANSACTION_READ_COMMITTED || !rows.postgres()) {
                assertThat(waiting.get(10, TimeUnit.SECONDS).status()).isEqualTo(Receipt.Status.DUPLICATE);
            } else {
                assertThatThrownBy(() -> waiting.get(10, TimeUnit.SECONDS))
                        .cause().isInstanceOf(RetryableException.class)
                        .extracting(e -> ((RetryableException) e).sqlState()).isEqualTo("40001");
                second.rollback();
                // The retry, in a fresh transaction, sees the committed entry.
                assertThat(inbox.receive(second, m).status()).isEqualTo(Receipt.Status.DUPLICATE);
            }
            second.rollback();
        }
        assertThat(rows.count("message_key = 'race-" + isolation + "'")).isEqualTo(1);
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("levels")
    void receive_concurrentDuplicateAfterFirstRollsBack_becomesFirst(TestDatabase db, int isolation) throws Exception {
        use(db);
        InboundMessage m = InboundMessage.of("undo-" + isolation, new byte[] {1});
        try (Connection first = begin(isolation); Connection second = db.connection()) {
            long secondPid = session(second);
            second.setTransactionIsolation(isolation);
            second.setAutoCommit(false);
            assertThat(inbox.receive(first, m).isFirst()).isTrue();

            CompletableFuture<Receipt> waiting = CompletableFuture.supplyAsync(() -> inbox.receive(second, m));
            awaitBlocked(secondPid);
            first.rollback();

            assertThat(waiting.get(10, TimeUnit.SECONDS).status()).isEqualTo(Receipt.Status.FIRST);
            second.commit();
        }
        assertThat(rows.count("message_key = 'undo-" + isolation + "'")).isEqualTo(1);
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("levels")
    void process_concurrentDuplicatesAtEachLevel_runTheHandlerOncePerKey(TestDatabase db, int isolation) throws Exception {
        use(db);
        DataSource ds = atIsolation(db.dataSource(), isolation);
        String insert = "insert into " + rows.table("business") + " values (?)";
        int threads = 8;
        int keys = 25;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<List<Outcome>>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            results.add(pool.submit(() -> {
                start.await();
                List<Outcome> outcomes = new ArrayList<>();
                for (int k = 0; k < keys; k++) {
                    InboundMessage m = InboundMessage.of("p" + isolation + "-" + k, new byte[] {(byte) k});
                    outcomes.add(inbox.process(ds, m, (tx, msg) -> {
                        try (PreparedStatement ps = tx.prepareStatement(insert)) {
                            ps.setString(1, msg.key());
                            ps.executeUpdate();
                        }
                        return null;
                    }));
                }
                return outcomes;
            }));
        }
        start.countDown();
        List<Outcome> all = new ArrayList<>();
        for (Future<List<Outcome>> f : results) {
            all.addAll(f.get(2, TimeUnit.MINUTES));
        }
        pool.shutdown();

        assertThat(all).extracting(Outcome::status)
                .containsOnly(Outcome.Status.PROCESSED, Outcome.Status.DUPLICATE)
                .filteredOn(s -> s == Outcome.Status.PROCESSED).hasSize(keys);
        assertThat(rows.queryLong("select count(*) from " + rows.table("business") + " where message_key like 'p"
                + isolation + "-%'")).isEqualTo(keys);
    }

    /**
     * Two deliveries that take the same two keys in opposite orders deadlock: the database breaks
     * it (PostgreSQL 40P01, MariaDB 1213) and the victim's receive throws a RetryableException,
     * while the other goes on to FIRST for both keys.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("levels")
    void receive_keysInOppositeOrders_deadlockSurfacesAsRetryable(TestDatabase db, int isolation) throws Exception {
        use(db);
        InboundMessage a = InboundMessage.of("dl-a-" + isolation, new byte[] {1});
        InboundMessage b = InboundMessage.of("dl-b-" + isolation, new byte[] {2});
        try (Connection one = begin(isolation); Connection two = begin(isolation)) {
            long oneId = session(one);
            assertThat(inbox.receive(one, a).isFirst()).isTrue();
            assertThat(inbox.receive(two, b).isFirst()).isTrue();
            CompletableFuture<Receipt> oneWaits = CompletableFuture.supplyAsync(() -> inbox.receive(one, b));
            awaitBlocked(oneId);
            Receipt twoGot = null;
            RetryableException victim = null;
            try {
                twoGot = inbox.receive(two, a);
            } catch (RetryableException e) {
                victim = e;
                two.rollback();
            }
            if (victim == null) {
                assertThatThrownBy(() -> oneWaits.get(20, TimeUnit.SECONDS)).cause()
                        .isInstanceOf(RetryableException.class);
                one.rollback();
                assertThat(twoGot.isFirst()).isTrue();
                two.commit();
            } else {
                assertThat(oneWaits.get(20, TimeUnit.SECONDS).isFirst()).isTrue();
                one.commit();
                victim = victim.getMessage().contains("1213") || victim.getMessage().contains("40P01") ? null : victim;
                assertThat(victim).as("the deadlock's SQL state or error code is named").isNull();
            }
        }
        assertThat(rows.count("message_key like 'dl-%-" + isolation + "' and status = 'COMPLETED'")).isEqualTo(2);
    }

    /**
     * A first delivery whose handler fails while two duplicates wait on its entry. On MariaDB the
     * rollback leaves three writers of one row (the failure count and the two duplicates), and
     * InnoDB may break a deadlock among them: the failure count retries it like any transaction of
     * {@code process}, so every delivery ends FAILED with its failure counted and none throws;
     * from a pool that hands out connections in auto-commit mode and from one that does not.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("autoCommitModes")
    void process_firstFailsWhileTwoDuplicatesWait_everyFailureIsCounted(TestDatabase db, boolean autoCommit)
            throws Exception {
        use(db);
        DataSource ds = autoCommit ? db.dataSource() : configured(db.dataSource(), c -> c.setAutoCommit(false));
        // more retries than the default: each round meets about one deadlock, and a delivery that
        // meets one four times running would end in a RetryableException, as documented
        Inbox failing = Inbox.builder("isolation-failures").tables(rows.tables).maxAttempts(100)
                .transactionRetries(10).build();
        Handler fails = (tx, m) -> {
            throw new IllegalStateException("handler failed");
        };
        int rounds = 20;
        List<String> lost = new ArrayList<>();
        List<Outcome.Status> statuses = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int r = 0; r < rounds; r++) {
                InboundMessage m = InboundMessage.of("fails-" + autoCommit + "-" + r, new byte[] {1});
                List<Long> sessions = new CopyOnWriteArrayList<>();
                DataSource watched = configured(ds, c -> sessions.add(session(c)));
                List<Future<Outcome>> duplicates = new ArrayList<>();
                Callable<Outcome> first = () -> failing.process(ds, m, (tx, msg) -> {
                    for (int i = 0; i < 2; i++) {
                        duplicates.add(pool.submit(() -> failing.process(watched, m, fails)));
                    }
                    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() ->
                            sessions.size() >= 2 && blocked(sessions.get(0)) && blocked(sessions.get(1)));
                    throw new IllegalStateException("handler failed");
                });
                List<Callable<Outcome>> deliveries = new ArrayList<>();
                deliveries.add(first);
                deliveries.add(() -> duplicates.get(0).get(30, TimeUnit.SECONDS));
                deliveries.add(() -> duplicates.get(1).get(30, TimeUnit.SECONDS));
                for (Callable<Outcome> delivery : deliveries) {
                    try {
                        statuses.add(delivery.call().status());
                    } catch (RetryableException | ExecutionException e) {
                        lost.add(m.key() + ": " + e);
                    }
                }
                assertThat(rows.queryLong("select failures from " + rows.inbox() + " where consumer = 'isolation-failures'"
                        + " and message_key = '" + m.key() + "'")).as("failures counted for " + m.key())
                        .isEqualTo(3 - lost.stream().filter(l -> l.startsWith(m.key() + ":")).count());
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(lost).as("deliveries whose failure was not counted").isEmpty();
        assertThat(statuses).hasSize(3 * rounds).containsOnly(Outcome.Status.FAILED);
    }

    private boolean blocked(long session) {
        return rows.postgres()
                ? "Lock".equals(rows.string("select wait_event_type from pg_stat_activity where pid = " + session))
                : DBS.mariadb().waitsForLock(session);
    }

    /** Each database, from a pool in auto-commit mode and from one that is not. */
    static Stream<Arguments> autoCommitModes() {
        return DBS.all().stream().flatMap(db -> Stream.of(true, false)
                .map(autoCommit -> Arguments.of(Named.of(db.kind().toString(), db),
                        Named.of(autoCommit ? "auto-commit" : "manual commit", autoCommit))));
    }

    @FunctionalInterface
    private interface ConnectionSetup {
        void apply(Connection c) throws SQLException;
    }

    /** {@code ds} that applies {@code setup} to each connection it hands out; the pool undoes it on return. */
    private static DataSource configured(DataSource ds, ConnectionSetup setup) {
        return (DataSource) Proxy.newProxyInstance(InboxIsolationIT.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    Object result;
                    try {
                        result = method.invoke(ds, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                    if (result instanceof Connection c) {
                        setup.apply(c);
                    }
                    return result;
                });
    }

    /** {@code ds} whose connections run at {@code isolation}; the pool restores its default on return. */
    private static DataSource atIsolation(DataSource ds, int isolation) {
        return configured(ds, c -> c.setTransactionIsolation(isolation));
    }
}
