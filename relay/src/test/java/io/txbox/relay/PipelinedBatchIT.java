package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestPostgres;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A worker claims its next batch while the broker confirms the current one and settles the
 * current one while the next is on the wire; the order of a routing key still holds when a row
 * fails in the middle of such a chain.
 */
class PipelinedBatchIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(10);

    static Db db;

    @BeforeAll
    static void setUp() {
        db = new Db(PG.dataSource(), PG.schema());
    }

    /** One publish call as the relay made it, in the relay's {@code batch}-th batch. */
    record Send(int batch, String routingKey, long id, String stepKey, boolean failed) {}

    /**
     * Confirms each record a few milliseconds later on another thread, like a broker, and fails
     * the first attempt of the given step keys. Notes, at the first record of each batch, whether
     * rows before it were still in the outbox (a batch sent before the previous one was settled).
     */
    static final class Recording implements Publisher {
        final ScheduledExecutorService broker = Executors.newSingleThreadScheduledExecutor();
        final List<Send> sends = new ArrayList<>();
        final Set<String> failOnce = ConcurrentHashMap.newKeySet();
        final AtomicInteger sentBeforePreviousSettled = new AtomicInteger();
        private boolean batchStart = true;
        private int batch;

        @Override
        public String broker() {
            return "recording";
        }

        @Override
        public synchronized CompletionStage<Void> publish(String target, PublishRecord record) {
            if (batchStart && failOnce.isEmpty() && db.queryLong("SELECT count(*) FROM "
                    + db.tables.qualified(db.tables.outboxTable()) + " WHERE id < ?", record.id()) > 0) {
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

    @Test
    void drain_nextBatchSentBeforePreviousSettled_eachRowOnceInIdOrder() {
        int n = 3_000;
        db.sendMany(n, i -> Db.message("p" + i, "d", "rk-" + (i % 13), "x"));
        try (Recording publisher = new Recording(); Relay relay = relay(publisher)) {
            relay.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> db.outboxRows() == 0);
            List<Send> sends = publisher.sends();
            assertThat(sends).hasSize(n);
            assertThat(sends).extracting(Send::id).isSorted();
            assertThat(publisher.sentBeforePreviousSettled.get())
                    .as("batches sent while the previous batch's rows were still in the outbox").isPositive();
        }
    }

    @Test
    void failedRowInChain_laterRowsOfItsKeyWaitForItsRetry() {
        int n = 3_000;
        db.sendMany(n, i -> Db.message("f" + i, "d", "rk-" + (i % 13), "x"));
        try (Recording publisher = new Recording(); Relay relay = relay(publisher)) {
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
}
