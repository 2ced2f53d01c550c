package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code close()} past its shutdown timeout still hands the lanes over at once. */
class RelayCloseIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    static final Map<TestDatabase.Kind, Db> DB = new EnumMap<>(TestDatabase.Kind.class);

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
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

    static Relay.Builder relay(Db db, Publisher publisher, String id) {
        // the default 30 s lane lease: a successor that had to wait it out would miss the deadline below
        return Relay.builder().dataSource(db.ds).tables(db.tables).relayId(id).workers(2)
                .route("d", Route.of(publisher, "t")).pollInterval(Duration.ofMillis(20))
                .publishTimeout(Duration.ofSeconds(20)).backlogInterval(Duration.ZERO);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void close_zeroTimeoutWithBatchInFlight_releasesLanesAndSuccessorTakesOverAtOnce(TestDatabase database)
            throws Exception {
        Db db = DB.get(database.kind());
        for (int round = 0; round < 8; round++) {
            int n = 50;
            int r = round;
            db.sendMany(n, i -> Db.message("k" + r + "-" + i, "d", "rk-" + (i % 7), "p"));
            Stuck stuck = new Stuck();
            Relay first = relay(db, stuck, "first-" + round).shutdownTimeout(Duration.ZERO).build();
            first.start();
            assertThat(stuck.sent.await(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

            first.close();

            assertThat(db.queryLong("SELECT count(*) FROM " + db.table(db.tables.relayLaneTable())
                    + " WHERE owner IS NOT NULL")).as("lanes still owned after close, round %d", round).isZero();
            assertThat(db.count(db.tables.relayMemberTable())).as("members left after close, round %d", round).isZero();
            assertThat(db.outboxRows()).as("the aborted batch stays in the outbox").isEqualTo(n);

            Confirming confirming = new Confirming();
            try (Relay second = relay(db, confirming, "second-" + round).build()) {
                second.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            }
            assertThat(confirming.keys).hasSize(n);
        }
    }
}
