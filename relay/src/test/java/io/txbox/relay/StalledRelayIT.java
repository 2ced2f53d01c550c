package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * A relay whose worker stalls in the middle of a batch (a GC pause, a slow callback) for longer
 * than its lane lease, while a second relay takes its lanes over and more rows are sent: when the
 * stalled worker wakes up and sends the rest of its stale batch, every record it sends again is a
 * repeat, and per routing key the records still arrive in the order the rows were sent.
 */
class StalledRelayIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    static final Map<TestDatabase.Kind, Db> DB = new java.util.EnumMap<>(TestDatabase.Kind.class);
    static final int KEYS = 40;
    static final int PER_PHASE = 1_000;

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    /** One broker for both relays: the records in the order they arrived, each with the relay that sent it. */
    static final class Broker {
        record Arrival(String relay, String routingKey, long sequence) {}

        private final List<Arrival> arrivals = new ArrayList<>();

        synchronized void add(Arrival a) {
            arrivals.add(a);
        }

        synchronized List<Arrival> arrivals() {
            return List.copyOf(arrivals);
        }
    }

    /** A publisher that confirms at once; once {@link #stall} is armed, its next publish call waits for {@link #resume}. */
    static final class Stalling implements Publisher {
        final String relay;
        final Broker broker;
        final CountDownLatch stalled = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        volatile boolean stall;

        Stalling(String relay, Broker broker) {
            this.relay = relay;
            this.broker = broker;
        }

        @Override
        public String broker() {
            return "stalling";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            if (stall) {
                stall = false;
                stalled.countDown();
                try {
                    if (!resume.await(60, TimeUnit.SECONDS)) {
                        return CompletableFuture.failedFuture(new IllegalStateException("never resumed"));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return CompletableFuture.failedFuture(e);
                }
            }
            broker.add(new Broker.Arrival(relay, record.routingKey(), Long.parseLong(Db.utf8(record.payload()))));
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {
            resume.countDown();
        }
    }

    static Relay relay(Db db, Publisher publisher, int batchSize) {
        return Relay.builder().dataSource(db.ds).tables(db.tables).workers(1).batchSize(batchSize)
                .route("d", Route.of(publisher, "t")).pollInterval(Duration.ofMillis(20))
                .laneLease(Duration.ofSeconds(2)).publishTimeout(Duration.ofSeconds(1))
                .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build();
    }

    /** Phase {@code phase}'s rows through four writers, each key from one writer in sequential transactions. */
    static void send(Db db, int phase) {
        int from = phase * PER_PHASE;
        db.sendConcurrently(PER_PHASE, 4, 20, i -> i % KEYS % 4, Duration.ZERO, 0,
                i -> Db.message("s" + (from + i), "d", "key-" + (i % KEYS), String.valueOf(from + i)));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relayStalledPastItsLease_staleBatchOnlyRepeats_perKeyOrderHolds(TestDatabase database) throws Exception {
        Db db = DB.get(database.kind());
        Broker broker = new Broker();
        Stalling first = new Stalling("first", broker);
        Stalling second = new Stalling("second", broker);
        try (Relay one = relay(db, first, 5)) {
            one.start();
            send(db, 0);
            await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0);

            first.stall = true; // a small batch stalls: most keys are not in it
            send(db, 1);
            assertThat(first.stalled.await(30, TimeUnit.SECONDS)).as("the first relay stalls in a batch").isTrue();
            try (Relay two = relay(db, second, 100)) {
                two.start();
                await().atMost(Duration.ofSeconds(30)).until(() -> two.status().ownedLanes() == 64);
                send(db, 2);
                // the second relay publishes rows sent after the stall began
                await().atMost(Duration.ofSeconds(30)).until(() -> broker.arrivals().stream()
                        .anyMatch(a -> a.relay().equals("second") && a.sequence() >= 2 * PER_PHASE));
                first.resume.countDown();
                await().atMost(Duration.ofSeconds(60)).until(() -> db.outboxRows() == 0);
            }
        }
        // both relays closed: the stalled worker has sent the rest of its stale batch
        KeyOrder order = new KeyOrder();
        List<Broker.Arrival> arrivals = broker.arrivals();
        arrivals.forEach(a -> order.add(a.routingKey(), a.sequence()));
        int takeover = arrivals.indexOf(arrivals.stream().filter(a -> a.relay().equals("second")).findFirst().orElseThrow());
        assertThat(arrivals.subList(takeover, arrivals.size())).as("the stalled worker sent its stale batch after the takeover")
                .anyMatch(a -> a.relay().equals("first"));
        assertThat(order.distinct()).isEqualTo(3 * PER_PHASE);
        assertThat(order.violations()).as("%s", order).isEmpty();
        assertThat(db.deadRows()).isZero();
    }
}
