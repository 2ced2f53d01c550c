package io.txbox.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.Outcome;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRedis;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * Redis in front of the database inbox, against the real PostgreSQL and Redis: duplicate storms
 * cost far fewer database transactions, and losing Redis, its keys or its connection mid-run
 * never costs an effect or doubles one.
 */
class HybridInboxIT {
    static final int THREADS = 32;
    static final int KEYS = 1000;
    /** Deliveries whose first run has committed before the mid-run fault strikes. */
    static final int FAULT_AFTER = 300;

    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(16);

    /** The database of the running test. */
    static TestDatabase current;

    @RegisterExtension
    static final TestRedis REDIS = TestRedis.perClass();

    /** This class's Redis key prefix, one per database so that the runs do not meet. */
    static String prefix() {
        return REDIS.prefix() + current.kind().name().toLowerCase(java.util.Locale.ROOT) + ":";
    }

    /** The txbox tables in the running test's database. */
    static TxboxTables tables() {
        return TxboxTables.inSchema(current.schema());
    }

    @BeforeAll
    static void migrate() throws Exception {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
            try (Connection c = d.dataSource().getConnection(); Statement s = c.createStatement()) {
                s.execute("create table effects (consumer text not null, message_key text not null)");
            }
        }
    }

    static Inbox database(String consumer) {
        return Inbox.builder(consumer).tables(tables()).build();
    }

    static HybridInbox.Builder hybrid(String consumer) {
        return HybridInbox.builder(database(consumer)).redisUrl(REDIS.url()).keyPrefix(prefix());
    }

    /** The business effect: one row per run, in the inbox's transaction. */
    static Handler effect(String consumer) {
        return (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("insert into effects values (?, ?)")) {
                ps.setString(1, consumer);
                ps.setString(2, m.key());
                ps.executeUpdate();
            }
            return ("done " + m.key()).getBytes(UTF_8);
        };
    }

    record Storm(long transactions, long effects, long distinctKeys, Map<Outcome.Status, Integer> outcomes) {
        /** Transactions beyond the one first run each key needs. */
        long duplicateTransactions() {
            return transactions - KEYS;
        }
    }

    /**
     * 32 threads deliver the same 1,000 keys (half in the same order, half shuffled). An
     * IN_FLIGHT answer is delivered again after a short backoff, as a broker would; every
     * delivery ends in a final outcome. {@code midRun} runs once, after {@link #FAULT_AFTER}
     * first runs committed.
     */
    static Storm storm(Inbox inbox, String consumer, Runnable midRun) throws Exception {
        AtomicLong borrowed = new AtomicLong();
        DataSource ds = CountingDataSource.counting(current.dataSource(), borrowed);
        Handler handler = effect(consumer);
        Map<Outcome.Status, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        AtomicInteger processed = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<?>> done = new ArrayList<>();
        try {
            for (int t = 0; t < THREADS; t++) {
                int worker = t;
                done.add(pool.submit(() -> {
                    List<Integer> order = new ArrayList<>();
                    for (int k = 0; k < KEYS; k++) {
                        order.add(k);
                    }
                    if (worker % 2 == 1) {
                        Collections.shuffle(order, new Random(worker));
                    }
                    start.await();
                    for (int k : order) {
                        InboundMessage m = InboundMessage.of("key-" + k, ("payload " + k).getBytes(UTF_8));
                        Outcome o;
                        while (!(o = inbox.process(ds, m, handler)).isFinal()) {
                            outcomes.computeIfAbsent(o.status(), s -> new AtomicInteger()).incrementAndGet();
                            LockSupport.parkNanos(Duration.ofMillis(2).toNanos()); // the broker's redelivery backoff
                        }
                        outcomes.computeIfAbsent(o.status(), s -> new AtomicInteger()).incrementAndGet();
                        if (o.status() == Outcome.Status.PROCESSED && processed.incrementAndGet() == FAULT_AFTER) {
                            midRun.run();
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        Map<Outcome.Status, Integer> counts = new EnumMap<>(Outcome.Status.class);
        outcomes.forEach((s, n) -> counts.put(s, n.get()));
        try (Connection c = current.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "select count(*), count(distinct message_key) from effects where consumer = ?")) {
            ps.setString(1, consumer);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Storm storm = new Storm(borrowed.get(), rs.getLong(1), rs.getLong(2), counts);
                System.out.printf("storm %s: %s%n", consumer, storm);
                return storm;
            }
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_32ThreadsSame1000Keys_exactly1000Effects_andDuplicatesOpenFarFewerTransactions(TestDatabase testDb) throws Exception {
        current = testDb;
        Storm without = storm(database("storm-db"), "storm-db", () -> {});
        Storm with;
        try (HybridInbox inbox = hybrid("storm-hybrid").build()) {
            with = storm(inbox, "storm-hybrid", () -> {});
        }

        assertThat(without.effects()).isEqualTo(KEYS);
        assertThat(without.distinctKeys()).isEqualTo(KEYS);
        assertThat(with.effects()).isEqualTo(KEYS);
        assertThat(with.distinctKeys()).isEqualTo(KEYS);
        double factor = (double) without.duplicateTransactions() / Math.max(1, with.duplicateTransactions());
        System.out.printf("database transactions opened by duplicates: %d without Redis, %d with: factor %.1f%n",
                without.duplicateTransactions(), with.duplicateTransactions(), factor);
        assertThat(without.duplicateTransactions()).isGreaterThanOrEqualTo((long) (THREADS - 1) * KEYS);
        assertThat(factor).isGreaterThanOrEqualTo(10);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_redisKeysDeletedMidRun_stillExactly1000Effects(TestDatabase testDb) throws Exception {
        current = testDb;
        AtomicLong deleted = new AtomicLong();
        Storm storm;
        try (HybridInbox inbox = hybrid("storm-flush").build()) {
            storm = storm(inbox, "storm-flush", () -> deleted.set(REDIS.deleteAll()));
        }

        assertThat(deleted.get()).as("keys deleted mid-run").isPositive();
        assertThat(storm.effects()).isEqualTo(KEYS);
        assertThat(storm.distinctKeys()).isEqualTo(KEYS);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_redisUnreachableMidRun_stillExactly1000Effects_andTheBreakerOpensThenClosesAfterRecovery(TestDatabase testDb)
            throws Exception {
        current = testDb;
        URI redis = URI.create(REDIS.url());
        MutableClock clock = new MutableClock();
        List<String> transitions = new CopyOnWriteArrayList<>();
        Map<RedisListener.Answer, AtomicInteger> answers = new ConcurrentHashMap<>();
        RedisListener listener = new RedisListener() {
            @Override
            public void onAnswer(String consumer, Answer answer) {
                answers.computeIfAbsent(answer, a -> new AtomicInteger()).incrementAndGet();
            }

            @Override
            public void onBreakerState(String consumer, BreakerState from, BreakerState to) {
                transitions.add(from + "->" + to);
            }
        };
        try (SeveringProxy proxy = new SeveringProxy(redis.getHost(), redis.getPort());
                HybridInbox inbox = hybrid("storm-down").redisUrl(proxy.url()).failureThreshold(3)
                        .openFor(Duration.ofMinutes(1)).clock(clock).listener(listener).build()) {
            Storm storm = storm(inbox, "storm-down", proxy::sever);

            assertThat(storm.effects()).isEqualTo(KEYS);
            assertThat(storm.distinctKeys()).isEqualTo(KEYS);
            assertThat(transitions).startsWith("CLOSED->OPEN");
            assertThat(inbox.breakerState()).isEqualTo(BreakerState.OPEN);
            assertThat(answers.get(RedisListener.Answer.SKIPPED)).as("deliveries that skipped Redis").isNotNull();
            System.out.printf("answers while Redis went away: %s%n", answers);

            proxy.restore();
            AtomicInteger probe = new AtomicInteger();
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
                clock.advance(Duration.ofMinutes(2));
                inbox.process(current.dataSource(), InboundMessage.of("probe-" + probe.incrementAndGet(), new byte[0]),
                        effect("storm-down-probe"));
                return inbox.breakerState() == BreakerState.CLOSED;
            });
            assertThat(transitions).contains("OPEN->HALF_OPEN").endsWith("HALF_OPEN->CLOSED");
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_completedWithAResponse_duplicateIsReplayedFromRedisWithoutADatabaseTransaction(TestDatabase testDb) {
        current = testDb;
        AtomicLong borrowed = new AtomicLong();
        DataSource ds = CountingDataSource.counting(current.dataSource(), borrowed);
        try (HybridInbox inbox = hybrid("http-like").build()) {
            InboundMessage request = InboundMessage.of("req-1", "{\"amount\":5}".getBytes(UTF_8));
            Claim claim = inbox.claim(ds, request);
            assertThat(claim.acquired()).isTrue();
            assertThat(inbox.claim(ds, request).status()).as("duplicate while in flight").isEqualTo(Claim.Status.IN_FLIGHT);
            inbox.complete(ds, claim, 201, Map.of("Location", List.of("/payments/9")), "{\"id\":9}".getBytes(UTF_8));
            long before = borrowed.get();

            Claim dup = inbox.claim(ds, request);

            assertThat(borrowed.get()).as("database transactions for the duplicate").isEqualTo(before);
            assertThat(dup.status()).isEqualTo(Claim.Status.DUPLICATE);
            assertThat(dup.resultStatus()).isEqualTo(201);
            assertThat(dup.resultHeaders()).containsEntry("Location", List.of("/payments/9"));
            assertThat(dup.result()).isEqualTo("{\"id\":9}".getBytes(UTF_8));
            assertThatThrownBy(() -> inbox.claim(ds, InboundMessage.of("req-1", "{\"amount\":6}".getBytes(UTF_8))))
                    .as("another payload under the same key goes to the database, which refuses it")
                    .isInstanceOf(KeyReuseException.class);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void answerInFlightOff_aDuplicateInFlightAsksTheDatabase_completedOnesStillComeFromRedis(TestDatabase testDb) {
        current = testDb;
        AtomicLong borrowed = new AtomicLong();
        DataSource ds = CountingDataSource.counting(current.dataSource(), borrowed);
        try (HybridInbox inbox = hybrid("no-in-flight").answerInFlight(false).build()) {
            InboundMessage m = InboundMessage.of("k-1", "p".getBytes(UTF_8));
            Claim claim = inbox.claim(ds, m);
            long before = borrowed.get();

            assertThat(inbox.claim(ds, m).status()).isEqualTo(Claim.Status.IN_FLIGHT);
            assertThat(borrowed.get()).as("the database answered the in-flight duplicate").isEqualTo(before + 1);

            inbox.complete(ds, claim, "r".getBytes(UTF_8));
            long afterComplete = borrowed.get();
            assertThat(inbox.claim(ds, m).status()).isEqualTo(Claim.Status.DUPLICATE);
            assertThat(borrowed.get()).as("the completed duplicate came from Redis").isEqualTo(afterComplete);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void complete_insideTheCallersTransaction_neverCachedBeforeCommit_theDatabaseAnswersTheDuplicate(TestDatabase testDb)
            throws Exception {
        current = testDb;
        try (HybridInbox inbox = hybrid("tx-complete").build()) {
            InboundMessage m = InboundMessage.of("t-1", "p".getBytes(UTF_8));
            Claim claim = inbox.claim(current.dataSource(), m);
            try (Connection tx = current.dataSource().getConnection()) {
                tx.setAutoCommit(false);
                inbox.complete(tx, claim, 200, Map.of(), "body".getBytes(UTF_8));
                tx.rollback();
            }
            assertThat(REDIS.commands().keys(prefix() + "cache|tx-complete|*"))
                    .as("no marker and no cached completion after the rollback").isEmpty();
            // rolled back: the claim is still the database's, in flight until its lease ends
            assertThat(inbox.claim(current.dataSource(), m).status()).isEqualTo(Claim.Status.IN_FLIGHT);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_failedHandler_isNotCached_andTheRetryRunsAgain(TestDatabase testDb) {
        current = testDb;
        try (HybridInbox inbox = hybrid("failing").build()) {
            InboundMessage m = InboundMessage.of("f-1", "p".getBytes(UTF_8));
            Outcome failed = inbox.process(current.dataSource(), m, (tx, msg) -> {
                throw new IllegalStateException("boom");
            });
            Outcome retried = inbox.process(current.dataSource(), m, effect("failing"));
            Outcome duplicate = inbox.process(current.dataSource(), m, effect("failing"));

            assertThat(failed.status()).isEqualTo(Outcome.Status.FAILED);
            assertThat(retried.status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(duplicate.status()).isEqualTo(Outcome.Status.DUPLICATE);
            assertThat(duplicate.result()).isEqualTo("done f-1".getBytes(UTF_8));
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_badKeys_refusedWithTheDatabaseInboxMessages_andNothingWrittenToRedis(TestDatabase testDb) {
        current = testDb;
        try (HybridInbox inbox = hybrid("corpus").build()) {
            Inbox db = database("corpus");
            for (String key : new String[] {null, "", "k".repeat(10 * 1024), "order\n1", "order-\uD83C"}) {
                InboundMessage m = InboundMessage.of(key, new byte[0]);
                String expected = messageOf(() -> db.process(current.dataSource(), m, effect("corpus")));
                assertThatThrownBy(() -> inbox.process(current.dataSource(), m, effect("corpus")))
                        .isInstanceOf(InvalidInputException.class)
                        .hasMessage(expected);
            }
            assertThat(REDIS.commands().keys(prefix() + "cache|corpus|*")).isEmpty();
        }
    }

    private static String messageOf(Runnable call) {
        try {
            call.run();
        } catch (InvalidInputException e) {
            return e.getMessage();
        }
        throw new AssertionError("the database inbox accepted it");
    }
}
