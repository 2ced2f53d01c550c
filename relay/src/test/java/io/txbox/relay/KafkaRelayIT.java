package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.DeleteGate;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The relay with Kafka, on PostgreSQL and on MariaDB: one invocation per database, except where PostgreSQL's own tools are needed. */
class KafkaRelayIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    static final Map<TestDatabase.Kind, Db> DB = new java.util.EnumMap<>(TestDatabase.Kind.class);

    Db db;

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    static KafkaPublisher kafka(String bootstrap) {
        return KafkaPublisher.builder().bootstrapServers(bootstrap)
                .property("delivery.timeout.ms", "3000").property("request.timeout.ms", "1000")
                .property("max.block.ms", "2000").build();
    }

    Relay.Builder relay(KafkaPublisher kafka, String destination, String topic) {
        return Relay.builder().dataSource(db.ds).tables(db.tables).route(destination, kafka.topic(topic))
                .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(4)).laneLease(Duration.ofSeconds(8))
                .backoff(Duration.ofMillis(50), Duration.ofMillis(500));
    }

    String topic(String hint) {
        String t = KAFKA.uniqueTopic(hint);
        KAFKA.createTopic(t, 4);
        return t;
    }

    /**
     * Four writers on their own connections send the rows while the relay runs, each routing key
     * from one writer in strictly sequential transactions, and each writer commits one transaction
     * 1.5 s late: per key, the rows arrive in the order they were sent.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_publishesKeyValueAndAllHeaders_inOrderPerRoutingKey(TestDatabase database) {
        db = DB.get(database.kind());
        String topic = topic("orders");
        int n = 2000;
        long seed = System.nanoTime();
        try (Relay relay = relay(kafka(KAFKA.bootstrapServers()), "payments", topic).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            relay.start();
            db.sendConcurrently(n, 4, 25, i -> i % 13 % 4, Duration.ofMillis(1_500), seed, i ->
                    OutboxMessage.builder(StepKey.of("o-" + i, "pay"), "payments")
                            .routingKey("acct-" + (i % 13)).payload(String.valueOf(i)).contentType("text/plain")
                            .header("tenant", "t" + (i % 2))
                            .traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").tracestate("vendor=x")
                            .build());
            consumed.awaitStepKeys(n, Duration.ofSeconds(60));
            ConsumerRecord<byte[], byte[]> r = consumed.records.stream()
                    .filter(x -> "o-5:pay".equals(Consumed.header(x, "idempotency-key"))).findFirst().orElseThrow();
            assertThat(Consumed.key(r)).isEqualTo("acct-5");
            assertThat(Consumed.value(r)).isEqualTo("5");
            assertThat(Consumed.header(r, "txbox-original-key")).isEqualTo("o-5");
            assertThat(Consumed.header(r, "content-type")).isEqualTo("text/plain");
            assertThat(Consumed.header(r, "traceparent")).isEqualTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
            assertThat(Consumed.header(r, "tracestate")).isEqualTo("vendor=x");
            assertThat(Consumed.header(r, "tenant")).isEqualTo("t1");
            KeyOrder order = consumed.keyOrder();
            assertThat(order.distinct()).isEqualTo(n);
            assertThat(order.violations()).as("writer seed %d: %s", seed, order).isEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relay_outOfOrderCommit_publishesBothRows(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String topic = topic("ooo");
        String outbox = db.table(db.tables.outboxTable());
        try (Relay relay = relay(kafka(KAFKA.bootstrapServers()), "ooo", topic).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic);
                Connection a = db.ds.getConnection()) {
            a.setAutoCommit(false);
            db.outbox.send(a, Db.message("A", "ooo", "k-a", "A")); // takes the smaller id, commits last
            long idA;
            try (var st = a.createStatement(); var rs = st.executeQuery("SELECT id FROM " + outbox + " WHERE step_key = 'A:step'")) {
                rs.next();
                idA = rs.getLong(1);
            }
            db.send(Db.message("B", "ooo", "k-b", "B"));
            assertThat(db.queryLong("SELECT id FROM " + outbox + " WHERE step_key = 'B:step'")).isGreaterThan(idA);
            relay.start();
            consumed.awaitStepKeys(1, Duration.ofSeconds(20));
            assertThat(Consumed.value(consumed.records.get(0))).isEqualTo("B");
            // B is confirmed and deleted while A's transaction is still open
            await().atMost(Duration.ofSeconds(10)).until(() ->
                    db.queryLong("SELECT count(*) FROM " + outbox + " WHERE step_key = 'B:step'") == 0);
            a.commit();
            consumed.awaitStepKeys(2, Duration.ofSeconds(20));
            assertThat(consumed.stepKeys()).containsExactlyInAnyOrder("A:step", "B:step");
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relay_unknownDestination_deadLettersWithReason(TestDatabase database) {
        db = DB.get(database.kind());
        String topic = topic("known");
        db.send(Db.message("lost-1", "no-such-destination", "k", "x"), Db.message("fine-1", "known", "k", "y"));
        try (Relay relay = relay(kafka(KAFKA.bootstrapServers()), "known", topic).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            relay.start();
            consumed.awaitStepKeys(1, Duration.ofSeconds(20));
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            assertThat(db.queryString("SELECT reason FROM " + db.table(db.tables.outboxDeadTable())
                    + " WHERE step_key = 'lost-1:step'")).contains("no route").contains("no-such-destination");
            assertThat(consumed.stepKeys()).containsExactly("fine-1:step");
            assertThat(relay.status().deadLettered()).isPositive();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relay_payloadTooLargeForBroker_deadLettersAtOnce(TestDatabase database) {
        db = DB.get(database.kind());
        String topic = topic("big");
        byte[] big = new byte[2 * 1024 * 1024];
        db.send(OutboxMessage.builder(StepKey.of("big-1", "step"), "big").routingKey("k").payload(big).build(),
                Db.message("small-1", "big", "k2", "fits"));
        try (Relay relay = relay(kafka(KAFKA.bootstrapServers()), "big", topic).maxAttempts(10).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            relay.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> db.outboxRows() == 0);
            String table = db.table(db.tables.outboxDeadTable());
            assertThat(db.queryString("SELECT reason FROM " + table + " WHERE step_key = 'big-1:step'"))
                    .startsWith("not retryable").contains("RecordTooLargeException");
            assertThat(db.queryLong("SELECT attempts FROM " + table + " WHERE step_key = 'big-1:step'")).isEqualTo(1);
            consumed.awaitStepKeys(1, Duration.ofSeconds(20));
            assertThat(consumed.settle()).hasSize(1);
        }
    }

    /**
     * Two relays share the table while four writers send, each key from one writer in sequential
     * transactions and one transaction per writer committed 1.5 s late, and the lanes move from
     * the first relay to the second: no row lost, and per key the rows arrive in the order sent.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void twoRelays_sameTable_loseNoRow_andKeepPerKeyOrder(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String topic = topic("two");
        int n = 6000;
        long seed = System.nanoTime();
        Thread producer = new Thread(() -> db.sendConcurrently(n, 4, 50, i -> i % 40 % 4, Duration.ofMillis(1_500), seed,
                i -> OutboxMessage.builder(StepKey.of("t-" + i, "s"), "two").routingKey("key-" + (i % 40))
                        .payload(String.valueOf(i)).build()));
        try (Relay one = relay(kafka(KAFKA.bootstrapServers()), "two", topic).laneLease(Duration.ofSeconds(3))
                        .publishTimeout(Duration.ofSeconds(2)).batchSize(100).build();
                Relay two = relay(kafka(KAFKA.bootstrapServers()), "two", topic).laneLease(Duration.ofSeconds(3))
                        .publishTimeout(Duration.ofSeconds(2)).batchSize(100).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            one.start();
            two.start();
            producer.start();
            // lanes move from the first relay to the second while rows flow
            await().atMost(Duration.ofSeconds(20)).until(() -> one.status().ownedLanes() > 0 && two.status().ownedLanes() > 0
                    && one.status().ownedLanes() + two.status().ownedLanes() == 64);
            producer.join();
            consumed.awaitStepKeys(n, Duration.ofSeconds(60));
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            consumed.settle(); // a late duplicate, if any, is read too
            KeyOrder order = consumed.keyOrder();
            assertThat(order.distinct()).isEqualTo(n);
            assertThat(order.violations()).as("writer seed %d: %s", seed, order).isEmpty();
            assertThat(one.status().published()).isPositive();
            assertThat(two.status().published()).isPositive();
            assertThat(db.queryLong("SELECT count(*) FROM " + db.table(db.tables.outboxDeadTable())
                    + " WHERE step_key LIKE 't-%'")).isZero();
        }
    }

    /**
     * The relay's session is terminated inside a batch transaction, after the claim and the
     * publish, while its DELETE of the confirmed rows waits at a {@link DeleteGate}. The rows
     * stay, are published again, and are deleted once the gate opens.
     */
    @Test
    void relay_sessionTerminatedBetweenClaimAndDelete_batchRepublishedNotLost() throws Exception {
        db = DB.get(TestDatabase.Kind.POSTGRESQL);
        TestPostgres PG = DBS.postgres();
        String topic = topic("dbdrop");
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(PG.jdbcUrl());
        hc.setUsername(PG.user());
        hc.setMaximumPoolSize(4);
        hc.addDataSourceProperty("ApplicationName", "txbox-relay-dbdrop");
        try (HikariDataSource relayDs = new HikariDataSource(hc);
                Relay relay = Relay.builder().dataSource(relayDs).tables(db.tables)
                        .route("dbdrop", kafka(KAFKA.bootstrapServers()).topic(topic))
                        .pollInterval(Duration.ofMillis(20)).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            try (DeleteGate gate = DeleteGate.shut(PG.dataSource(), PG.schema(),
                    db.table(db.tables.outboxTable()))) {
                relay.start();
                db.send(Db.message("drop-1", "dbdrop", "k", "1"), Db.message("drop-2", "dbdrop", "k", "2"),
                        Db.message("drop-3", "dbdrop", "k", "3"));

                int pid = gate.awaitWaiting("txbox-relay-dbdrop", Duration.ofSeconds(30));
                consumed.awaitStepKeys(3, Duration.ofSeconds(30)); // published once, inside that transaction
                assertThat(db.queryString("SELECT pg_terminate_backend(?::int)::text", pid)).isEqualTo("true");
                await().atMost(Duration.ofSeconds(10)).until(() ->
                        db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid) == 0);
                assertThat(db.outboxRows()).as("the terminated transaction deleted nothing").isEqualTo(3);

                consumed.awaitRecords(6, Duration.ofSeconds(30)); // every row published a second time
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0);
            assertThat(consumed.stepKeys()).containsExactlyInAnyOrder("drop-1:step", "drop-2:step", "drop-3:step");
            assertThat(db.deadRows()).isZero();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void close_midBatch_leavesNoRowStuck(TestDatabase database) {
        db = DB.get(database.kind());
        String topic = topic("close");
        int n = 5000;
        db.sendMany(n, i -> OutboxMessage.builder(StepKey.of("c-" + i, "s"), "close").routingKey("k" + (i % 10))
                .payload("x".repeat(400)).build());
        Relay first = relay(kafka(KAFKA.bootstrapServers()), "close", topic).batchSize(200).build();
        first.start();
        await().atMost(Duration.ofSeconds(20)).until(() -> first.status().published() > 0);
        first.close();
        long left = db.outboxRows();
        // nothing is locked or leased any more: every lane is free and every row can be claimed
        assertThat(db.queryLong("SELECT count(*) FROM " + db.table(db.tables.relayLaneTable())
                + " WHERE owner IS NOT NULL")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + db.table(db.tables.outboxTable())
                + " WHERE attempts > 0")).isZero();
        assertThat(first.status().published()).isEqualTo(n - left);
        try (Relay second = relay(kafka(KAFKA.bootstrapServers()), "close", topic).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            second.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0);
            consumed.awaitStepKeys(n, Duration.ofSeconds(30));
            assertThat(consumed.stepKeys()).hasSize(n);
            // across the close and the restart, per key in the order sent (step key c-<i>:s)
            KeyOrder order = new KeyOrder();
            consumed.records.forEach(r -> {
                String step = Consumed.header(r, "idempotency-key");
                order.add(Consumed.key(r), Long.parseLong(step.substring(2, step.indexOf(':'))));
            });
            assertThat(order.violations()).as("%s", order).isEmpty();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inProcessRelay_wokenBySend_publishesWithoutPollWait(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String topic = topic("wake");
        // Poll interval and lane lease of ten minutes: the worker's own timers (poll, lane renewal
        // every lease/4, rebalance every lease/6) stay silent for 100 s after it took its lanes, so
        // a row published within the 30 s bound below can only have been published by the wake-up.
        Duration quiet = Duration.ofMinutes(10);
        try (Relay relay = relay(kafka(KAFKA.bootstrapServers()), "wake", topic).pollInterval(quiet).laneLease(quiet)
                        .wakeOn(db.outbox).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            relay.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> relay.status().ownedLanes() == 64);
            long lanesTaken = System.nanoTime();
            for (int i = 0; i < 3; i++) {
                db.send(Db.message("wake-" + i, "wake", "k" + i, "w"));
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(5)).until(() -> db.outboxRows() == 0);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - lanesTaken)).as("all three sends handled before any timer fired")
                    .isLessThan(quiet.dividedBy(6));
            consumed.awaitStepKeys(3, Duration.ofSeconds(30));
            assertThat(consumed.stepKeys()).containsExactlyInAnyOrder("wake-0:step", "wake-1:step", "wake-2:step");
        }
    }
}
