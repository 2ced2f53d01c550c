package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestKafka;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * The relay's order contract on both databases, one history per way it was broken: if T1 commits
 * before T2 begins and both send a row with routing key K, T1's row is published first. Each
 * history is read back from Kafka and checked by the {@link KeyOrder} oracle.
 */
class KeyOrderIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(6);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    static final Map<TestDatabase.Kind, Db> DB = new java.util.EnumMap<>(TestDatabase.Kind.class);

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    /** Kafka, with the worker held inside {@link #publish} for one step key until released. */
    static final class Gate implements Publisher {
        final Publisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
        final String heldStepKey;
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        Gate(String heldStepKey) {
            this.heldStepKey = heldStepKey;
        }

        @Override
        public String broker() {
            return kafka.broker();
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            if (record.stepKey().equals(heldStepKey)) {
                reached.countDown();
                try {
                    assertThat(release.await(30, TimeUnit.SECONDS)).as("released").isTrue();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return kafka.publish(target, record);
        }

        void awaitReached() throws InterruptedException {
            assertThat(reached.await(30, TimeUnit.SECONDS)).as("the relay reached " + heldStepKey).isTrue();
        }

        @Override
        public void close() {
            release.countDown();
            kafka.close();
        }
    }

    /** Holds the worker in its listener once {@code after} rows were published, as a long pause would. */
    static final class Stall implements RelayListener {
        final int after;
        final AtomicLong published = new AtomicLong();
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        Stall(int after) {
            this.after = after;
        }

        @Override
        public void published(String destination, String broker, int count, Duration latency) {
            if (published.addAndGet(count) >= after && reached.getCount() > 0) {
                reached.countDown();
                try {
                    assertThat(release.await(30, TimeUnit.SECONDS)).as("released").isTrue();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        void awaitReached() throws InterruptedException {
            assertThat(reached.await(30, TimeUnit.SECONDS)).as(after + " rows published").isTrue();
        }
    }

    private String topic(String hint) {
        String t = KAFKA.uniqueTopic(hint);
        KAFKA.createTopic(t, 2);
        return t;
    }

    private static Relay.Builder relay(Db db, Publisher publisher, String destination, String topic, AtomicLong skew) {
        return Relay.builder().dataSource(db.ds).tables(db.tables).route(destination, Route.of(publisher, topic)).workers(1)
                .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(4))
                .ticker(() -> System.nanoTime() + skew.get());
    }

    private static KeyOrder keyOrder(Consumed consumed) {
        return KeyOrder.ofPayloads(consumed.records.stream().map(Consumed::value).filter(v -> v.startsWith("K:")).toList());
    }

    private static void awaitGone(Db db, String stepKey) {
        String outbox = db.table(db.tables.outboxTable());
        await().atMost(Duration.ofSeconds(20))
                .until(() -> db.queryLong("SELECT count(*) FROM " + outbox + " WHERE step_key = ?", stepKey) == 0);
    }

    /**
     * T1 holds its row of K uncommitted past the second in which the claim used to settle its
     * floor, while other keys flow; T2 sends K right after T1 commits.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void slowCommit_laterTransactionOfTheKey_publishedAfterIt(TestDatabase database) throws Exception {
        Db db = DB.get(database.kind());
        String topic = topic("slow");
        AtomicLong skew = new AtomicLong();
        try (Publisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
                Relay relay = relay(db, kafka, "slow", topic, skew).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic);
                Connection t1 = db.ds.getConnection()) {
            t1.setAutoCommit(false);
            db.outbox.send(t1, Db.message("K1", "slow", "K", "K:1")); // the smallest id, committed last
            relay.start();
            db.send(Db.message("X1", "slow", "x", "X:1"));
            awaitGone(db, "X1:step");
            skew.addAndGet(Duration.ofMillis(1_100).toNanos()); // past the time the floor used to settle in
            db.send(Db.message("X2", "slow", "x", "X:2"));
            awaitGone(db, "X2:step");
            t1.commit();
            db.send(Db.message("K2", "slow", "K", "K:2"));
            consumed.awaitStepKeys(4, Duration.ofSeconds(30));
            KeyOrder order = keyOrder(consumed);
            assertThat(order.distinct()).isEqualTo(2);
            assertThat(order.violations()).as(order.toString()).isEmpty();
        }
    }

    /**
     * K's row is visible but not yet due in the relay's transaction (its writer began after the
     * transaction) when a higher id is claimed in the same transaction; then the worker stalls past
     * the second the floor used to settle in, and T2 sends K.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void notYetDueThenStall_laterTransactionOfTheKey_publishedAfterIt(TestDatabase database) throws Exception {
        Db db = DB.get(database.kind());
        String topic = topic("due");
        AtomicLong skew = new AtomicLong();
        Stall stall = new Stall(2);
        try (Gate gate = new Gate("X:step");
                Relay relay = relay(db, gate, "due", topic, skew).listener(stall).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic);
                Connection early = db.ds.getConnection();
                Connection t1 = db.ds.getConnection()) {
            db.send(Db.message("X", "due", "x", "X:1"));
            early.setAutoCommit(false);
            try (Statement s = early.createStatement()) {
                s.execute("SELECT 1"); // its transaction begins before the relay's
            }
            relay.start();
            gate.awaitReached(); // the relay's transaction has begun and claimed X
            t1.setAutoCommit(false);
            db.outbox.send(t1, Db.message("K1", "due", "K", "K:1"));
            db.outbox.send(early, Db.message("Y", "due", "y", "Y:1")); // a higher id, due in the relay's transaction
            t1.commit();
            early.commit();
            gate.release.countDown();
            stall.awaitReached(); // X and Y are published and committed: the worker stalls in its listener
            skew.addAndGet(Duration.ofMillis(1_100).toNanos()); // past the time the floor used to settle in
            db.send(Db.message("K2", "due", "K", "K:2"));
            stall.release.countDown();
            consumed.awaitStepKeys(4, Duration.ofSeconds(30));
            KeyOrder order = keyOrder(consumed);
            assertThat(order.distinct()).isEqualTo(2);
            assertThat(order.violations()).as(order.toString()).isEmpty();
        }
    }

    /**
     * K1 takes its id before X and commits while the relay's batch is sending X; K2 is written
     * after K1 commits, and the same transaction's chained claim runs after both.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void chainedClaim_rowCommittedBelowTheBatch_laterRowOfItsKeyWaits(TestDatabase database) throws Exception {
        Db db = DB.get(database.kind());
        String topic = topic("chain");
        try (Gate gate = new Gate("X:step");
                Relay relay = relay(db, gate, "chain", topic, new AtomicLong()).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic);
                Connection t1 = db.ds.getConnection()) {
            t1.setAutoCommit(false);
            db.outbox.send(t1, Db.message("K1", "chain", "K", "K:1"));
            db.send(Db.message("X", "chain", "x", "X:1"));
            relay.start();
            gate.awaitReached();
            t1.commit();
            db.send(Db.message("K2", "chain", "K", "K:2"));
            gate.release.countDown();
            consumed.awaitStepKeys(3, Duration.ofSeconds(30));
            List<String> values = consumed.records.stream().map(Consumed::value).toList();
            KeyOrder order = keyOrder(consumed);
            assertThat(order.distinct()).isEqualTo(2);
            assertThat(order.violations()).as(values.toString()).isEmpty();
        }
    }

    /**
     * One transaction sends K twice, around another transaction's row X; it commits while the
     * relay's batch is sending X, and the same relay transaction's chained claim runs after: the
     * second row is above the batch, the first below it.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void chainedClaim_transactionCommittedAcrossTheBatch_itsRowsKeepTheirOrder(TestDatabase database) throws Exception {
        Db db = DB.get(database.kind());
        String topic = topic("across");
        try (Gate gate = new Gate("X:step");
                Relay relay = relay(db, gate, "across", topic, new AtomicLong()).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic);
                Connection t = db.ds.getConnection()) {
            t.setAutoCommit(false);
            db.outbox.send(t, Db.message("K1", "across", "K", "K:1"));
            db.send(Db.message("X", "across", "x", "X:1"));
            db.outbox.send(t, Db.message("K2", "across", "K", "K:2"));
            relay.start();
            gate.awaitReached();
            t.commit();
            gate.release.countDown();
            consumed.awaitStepKeys(3, Duration.ofSeconds(30));
            List<String> values = consumed.records.stream().map(Consumed::value).toList();
            KeyOrder order = keyOrder(consumed);
            assertThat(order.distinct()).isEqualTo(2);
            assertThat(order.violations()).as(values.toString()).isEmpty();
        }
    }

    /** Kafka, failing the first attempt of one step key as a broker error would. */
    static final class FailOnce implements Publisher {
        final Publisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
        final String failedStepKey;
        final AtomicBoolean failed = new AtomicBoolean();

        FailOnce(String failedStepKey) {
            this.failedStepKey = failedStepKey;
        }

        @Override
        public String broker() {
            return kafka.broker();
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            if (record.stepKey().equals(failedStepKey) && failed.compareAndSet(false, true)) {
                return CompletableFuture.failedFuture(PublishException.retryable("broker down", null));
            }
            return kafka.publish(target, record);
        }

        @Override
        public void close() {
            kafka.close();
        }
    }

    /**
     * K1 fails once, so K2 and K3 of the same transaction stay behind its retry, unclaimed while
     * its key is held; other keys' rows flow meanwhile. The transaction that publishes K1 ends the
     * hold, and K4, written right after, must still wait for K2 and K3.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void heldRowsReleased_laterTransactionOfTheKey_publishedAfterThem(TestDatabase database) throws Exception {
        Db db = DB.get(database.kind());
        String topic = topic("held");
        try (FailOnce publisher = new FailOnce("K1:step");
                Relay relay = relay(db, publisher, "held", topic, new AtomicLong())
                        .backoff(Duration.ofMillis(1_500), Duration.ofSeconds(2)).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            db.send(Db.message("K1", "held", "K", "K:1"), Db.message("K2", "held", "K", "K:2"),
                    Db.message("K3", "held", "K", "K:3"));
            relay.start();
            await().atMost(Duration.ofSeconds(20)).until(publisher.failed::get);
            for (int i = 0; i < 5; i++) { // the claims pass K2 and K3 by while the key is held
                db.send(Db.message("X" + i, "held", "x" + i, "X:" + i));
                awaitGone(db, "X" + i + ":step");
            }
            awaitGone(db, "K1:step");
            db.send(Db.message("K4", "held", "K", "K:4"));
            consumed.awaitStepKeys(9, Duration.ofSeconds(30));
            List<String> values = consumed.records.stream().map(Consumed::value).toList();
            KeyOrder order = keyOrder(consumed);
            assertThat(order.distinct()).isEqualTo(4);
            assertThat(order.violations()).as(values.toString()).isEmpty();
        }
    }
}
