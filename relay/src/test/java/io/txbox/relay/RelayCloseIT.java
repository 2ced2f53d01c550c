package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestPostgres;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code close()} past its shutdown timeout still hands the lanes over at once. */
class RelayCloseIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(10);

    static Db db;

    @BeforeAll
    static void setUp() {
        db = new Db(PG.dataSource(), PG.schema());
    }

    /** Accepts every record and never confirms it: a batch stays in flight until the publish timeout. */
    static final class Stuck implements Publisher {
        final CountDownLatch sent = new CountDownLatch(1);

        @Override
        public String broker() {
            return "stuck";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            sent.countDown();
            return new CompletableFuture<>();
        }

        @Override
        public void close() {}
    }

    /** Confirms every record at once and remembers its step key. */
    static final class Confirming implements Publisher {
        final Set<String> keys = ConcurrentHashMap.newKeySet();

        @Override
        public String broker() {
            return "confirming";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            keys.add(record.stepKey());
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    }

    Relay.Builder relay(Publisher publisher, String id) {
        // the default 30 s lane lease: a successor that had to wait it out would miss the deadline below
        return Relay.builder().dataSource(db.ds).tables(db.tables).relayId(id).workers(2)
                .route("d", Route.of(publisher, "t")).pollInterval(Duration.ofMillis(20))
                .publishTimeout(Duration.ofSeconds(20)).backlogInterval(Duration.ZERO);
    }

    @Test
    void close_zeroTimeoutWithBatchInFlight_releasesLanesAndSuccessorTakesOverAtOnce() throws Exception {
        for (int round = 0; round < 8; round++) {
            int n = 50;
            int r = round;
            db.sendMany(n, i -> Db.message("k" + r + "-" + i, "d", "rk-" + (i % 7), "p"));
            Stuck stuck = new Stuck();
            Relay first = relay(stuck, "first-" + round).shutdownTimeout(Duration.ZERO).build();
            first.start();
            assertThat(stuck.sent.await(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

            first.close();

            assertThat(db.queryLong("SELECT count(*) FROM " + db.tables.qualified(db.tables.relayLaneTable())
                    + " WHERE owner IS NOT NULL")).as("lanes still owned after close, round %d", round).isZero();
            assertThat(db.count(db.tables.relayMemberTable())).as("members left after close, round %d", round).isZero();
            assertThat(db.outboxRows()).as("the aborted batch stays in the outbox").isEqualTo(n);

            Confirming confirming = new Confirming();
            try (Relay second = relay(confirming, "second-" + round).build()) {
                second.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            }
            assertThat(confirming.keys).hasSize(n);
        }
    }
}
