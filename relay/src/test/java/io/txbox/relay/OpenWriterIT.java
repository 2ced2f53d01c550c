package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * A sender's transaction that stays open past the lane lease with an uncommitted row (a slow
 * commit) must not hold up the relay's settling of the rows around it: the relay publishes and
 * deletes the committed rows while that transaction is open, each once, and the late row once after
 * its commit. A delete that waited for the open transaction's row lock would outlive the lane lease
 * (the statement limit the relay sets), roll its batch back and publish every row of it again.
 */
class OpenWriterIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(6);

    static final Map<TestDatabase.Kind, Db> DB = new java.util.EnumMap<>(TestDatabase.Kind.class);
    static final Duration LANE_LEASE = Duration.ofSeconds(2);
    static final int COMMITTED = 20;

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    /** Confirms at once and counts every publication of each step key. */
    static final class Counting implements Publisher {
        final Map<String, AtomicInteger> published = new ConcurrentHashMap<>();

        @Override
        public String broker() {
            return "counting";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            published.computeIfAbsent(record.stepKey(), k -> new AtomicInteger()).incrementAndGet();
            return CompletableFuture.completedFuture(null);
        }

        long repeats() {
            return published.values().stream().filter(n -> n.get() > 1).count();
        }

        @Override
        public void close() {}
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void senderTransactionOpenPastTheLaneLease_committedRowsPublishedOnceWhileItIsOpen(TestDatabase database)
            throws Exception {
        Db db = DB.get(database.kind());
        Counting publisher = new Counting();
        String prefix = "ow-" + database.kind().name().toLowerCase(java.util.Locale.ROOT) + "-";
        Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).workers(1).batchSize(50)
                .route("d", Route.of(publisher, "t")).pollInterval(Duration.ofMillis(20)).laneLease(LANE_LEASE)
                .publishTimeout(Duration.ofSeconds(1)).build();
        try (relay; Connection open = db.ds.getConnection()) {
            open.setAutoCommit(false);
            // the slow sender: its row has an id below the others, and its transaction stays open
            db.outbox.send(open, Db.message(prefix + "late", "d", "late", "late"));
            db.sendMany(COMMITTED, i -> Db.message(prefix + i, "d", "key-" + (i % 4), String.valueOf(i)));
            relay.start();

            // every committed row published and deleted while the sender's transaction is still open
            // (or, failing that, published twice): longer than two lane leases either way
            await().atMost(LANE_LEASE.multipliedBy(5))
                    .until(() -> db.outboxRows() == 0 && publisher.published.size() == COMMITTED || publisher.repeats() > 0);
            assertThat(publisher.repeats()).as("rows published twice while a sender's transaction was open: %s",
                    publisher.published).isZero();
            assertThat(relay.status().lastError()).as("the relay's last error").isNull();

            open.commit();
            await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0
                    && publisher.published.containsKey(prefix + "late:step"));
        }
        List<String> expected = IntStream.range(0, COMMITTED).mapToObj(i -> prefix + i + ":step")
                .collect(java.util.stream.Collectors.toList());
        expected.add(prefix + "late:step");
        assertThat(publisher.published).as("each row published once").hasSize(COMMITTED + 1)
                .allSatisfy((step, n) -> assertThat(n.get()).as(step).isEqualTo(1));
        assertThat(publisher.published.keySet()).containsExactlyInAnyOrderElementsOf(expected);
    }
}
