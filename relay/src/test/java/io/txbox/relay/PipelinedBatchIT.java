package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * A worker claims its next batch while the broker confirms the current one and settles the
 * current one while the next is on the wire; the order of a routing key still holds when a row
 * fails in the middle of such a chain, and when a row of the key commits below the batch being
 * sent. On PostgreSQL and on MariaDB.
 */
class PipelinedBatchIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    static final Map<TestDatabase.Kind, Db> DB = new java.util.EnumMap<>(TestDatabase.Kind.class);

    Db db;

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    /** One publish call as the relay made it, in the relay's {@code batch}-th batch. */
    record Send(int batch, String routingKey, long id, String stepKey, boolean failed) {}

    /**
     * Confirms each record a few milliseconds later on another thread, like a broker, and fails
     * the first attempt of the given step keys. Notes, at the first record of each batch, whether
     * rows before it were still in the outbox (a batch sent before the previous one was settled).
     */
    static final class Recording implements Publisher {
        final Db db;
        final ScheduledExecutorService broker = Executors.newSingleThreadScheduledExecutor();
        final List<Send> sends = new ArrayList<>();
        final Set<String> failOnce = ConcurrentHashMap.newKeySet();
        final AtomicInteger sentBeforePreviousSettled = new AtomicInteger();
        private boolean batchStart = true;
        private int batch;
        /** The step key whose publish call waits, on the relay's thread, until {@link #release} opens. */
        volatile String hold;
        final CountDownLatch holding = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        Recording(Db db) {
            this.db = db;
        }

        @Override
        public String broker() {
            return "recording";
        }

        @Override
        public synchronized CompletionStage<Void> publish(String target, PublishRecord record) {
            if (record.stepKey().equals(hold)) {
                holding.countDown();
                try {
                    if (!release.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the test never released " + hold);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (batchStart && failOnce.isEmpty() && db.queryLong("SELECT count(*) FROM "
                    + db.table(db.tables.outboxTable()) + " WHERE id < ?", record.id()) > 0) {
                sentBeforePreviousSettled.incrementAndGet();
            }
            batchStart = false;
            boolean fail = failOnce.remove(record.stepKey());
            sends.add(new Send(batch, record.routingKey(), record.id(), record.stepKey(), fail));
            CompletableFuture<Void> confirmed = new CompletableFuture<>();
            broker.schedule(() -> {
                if (fail) {
                    confirmed.completeExceptionally(PublishException.retryable("refused once by the test", null));
                } else {
                    confirmed.complete(null);
                }
            }, 2, TimeUnit.MILLISECONDS);
            return confirmed;
        }

        @Override
        public synchronized void endOfBatch() {
            batchStart = true;
            batch++;
        }

        synchronized List<Send> sends() {
            return List.copyOf(sends);
        }

        @Override
        public void close() {
            broker.shutdownNow();
        }
    }

    Relay relay(Recording publisher) {
        return Relay.builder().dataSource(db.ds).tables(db.tables).workers(1).batchSize(100)
                .route("d", Route.of(publisher, "t")).pollInterval(Duration.ofMillis(20))
                .backoff(Duration.ofMillis(50), Duration.ofMillis(100)).backlogInterval(Duration.ZERO).build();
    }

    /** The per-key order oracle fed the sends in call order: routing key and outbox id. */
    static KeyOrder keyOrder(List<Send> sends) {
        KeyOrder order = new KeyOrder();
        sends.forEach(s -> order.add(s.routingKey(), s.id()));
        return order;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void drain_nextBatchSentBeforePreviousSettled_eachRowOnceInIdOrder(TestDatabase database) {
        db = DB.get(database.kind());
        int n = 3_000;
        // four writers on their own connections, each key from one writer in sequential transactions
        db.sendConcurrently(n, 4, 100, i -> i % 13 % 4, Duration.ZERO, 0, i -> Db.message("p" + i, "d", "rk-" + (i % 13), "x"));
        try (Recording publisher = new Recording(db); Relay relay = relay(publisher)) {
            relay.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> db.outboxRows() == 0);
            List<Send> sends = publisher.sends();
            assertThat(sends).hasSize(n);
            assertThat(sends).extracting(Send::id).isSorted();
            KeyOrder order = keyOrder(sends);
            assertThat(order.violations()).as("%s", order).isEmpty();
            assertThat(publisher.sentBeforePreviousSettled.get())
                    .as("batches sent while the previous batch's rows were still in the outbox").isPositive();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void failedRowInChain_laterRowsOfItsKeyWaitForItsRetry(TestDatabase database) {
        db = DB.get(database.kind());
        int n = 3_000;
        db.sendMany(n, i -> Db.message("f" + i, "d", "rk-" + (i % 13), "x"));
        try (Recording publisher = new Recording(db); Relay relay = relay(publisher)) {
            publisher.failOnce.addAll(List.of("f350:step", "f1234:step", "f1235:step", "f2890:step"));
            relay.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> db.outboxRows() == 0);
            List<Send> sends = publisher.sends();
            assertThat(sends.stream().filter(Send::failed)).hasSize(4);
            // a failed row's later rows of the same key may share its batch (sent before the broker
            // answered), but no later batch sends its key before the failed row itself again
            Map<String, Send> failedPending = new HashMap<>();
            Map<String, Integer> confirmations = new HashMap<>();
            for (Send s : sends) {
                Send pending = failedPending.get(s.routingKey());
                if (pending != null && s.batch() > pending.batch()) {
                    assertThat(s.id()).as("first send of %s after the batch in which %s failed", s.routingKey(),
                            pending.stepKey()).isEqualTo(pending.id());
                    failedPending.remove(s.routingKey());
                }
                if (s.failed()) {
                    failedPending.put(s.routingKey(), s);
                } else {
                    confirmations.merge(s.stepKey(), 1, Integer::sum);
                }
            }
            assertThat(failedPending).as("failed rows never sent again").isEmpty();
            assertThat(confirmations).hasSize(n);
            assertThat(confirmations.values()).containsOnly(1);
        }
    }

    /**
     * K1 takes its id before row X and commits while the relay's batch is sending X; K2, of K1's
     * routing key, is sent after K1 committed. K1 committed before K2's transaction began, so K1
     * goes out first: X, K1, K2, whichever batch or claim finds them.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rowCommittedBelowTheBatchBeingSent_goesOutBeforeItsKeysLaterRow(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String outbox = db.table(db.tables.outboxTable());
        try (Recording publisher = new Recording(db); Relay relay = relay(publisher);
                Connection k1 = db.ds.getConnection()) {
            publisher.hold = "X:step";
            k1.setAutoCommit(false);
            db.outbox.send(k1, Db.message("K1", "d", "k", "1")); // the smaller id, committed later
            long idK1;
            try (var st = k1.createStatement(); var rs = st.executeQuery("SELECT id FROM " + outbox + " WHERE step_key = 'K1:step'")) {
                rs.next();
                idK1 = rs.getLong(1);
            }
            db.send(Db.message("X", "d", "x", "x"));
            assertThat(db.queryLong("SELECT id FROM " + outbox + " WHERE step_key = 'X:step'")).isGreaterThan(idK1);
            relay.start();
            assertThat(publisher.holding.await(30, TimeUnit.SECONDS)).as("the relay sends X").isTrue();
            k1.commit(); // while X is on the wire
            db.send(Db.message("K2", "d", "k", "2"));
            publisher.release.countDown();
            await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0);
            List<Send> sends = publisher.sends();
            assertThat(sends).extracting(Send::stepKey).containsExactly("X:step", "K1:step", "K2:step");
            assertThat(keyOrder(sends).violations()).isEmpty();
        }
    }
}
