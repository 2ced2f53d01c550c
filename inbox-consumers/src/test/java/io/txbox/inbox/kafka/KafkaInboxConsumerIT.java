package io.txbox.inbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.CommitCounting;
import io.txbox.inbox.consumer.CountingListener;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.Effects;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.params.provider.MethodSource;

/** The Kafka consumer against a real broker and a real database, PostgreSQL and MariaDB. */
class KafkaInboxConsumerIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    static final Duration WAIT = Duration.ofSeconds(45);
    static final Duration FAST_INITIAL = Duration.ofMillis(100);
    static final Duration FAST_MAX = Duration.ofMillis(400);

    static final Map<TestDatabase.Kind, Effects> EFFECTS = new EnumMap<>(TestDatabase.Kind.class);
    static KafkaProducer<byte[], byte[]> producer;
    final List<InboxConsumer> started = new ArrayList<>();
    TestDatabase db;
    TxboxTables tables;
    Effects effects;

    @BeforeAll
    static void setUp() {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
            EFFECTS.put(d.kind(), new Effects(d));
        }
        producer = new KafkaProducer<>(KAFKA.producerConfig(), new ByteArraySerializer(), new ByteArraySerializer());
    }

    @AfterAll
    static void tearDown() {
        producer.close();
    }

    @AfterEach
    void closeConsumers() {
        started.forEach(InboxConsumer::close);
    }

    /** Runs the test on {@code database}. */
    private void use(TestDatabase database) {
        db = database;
        tables = TxboxTables.inSchema(database.schema());
        effects = EFFECTS.get(database.kind());
    }

    /** The consumer's name, which is also its group id on the shared broker: one per database. */
    private String name(String hint) {
        return hint + "-" + db.kind().name().toLowerCase(Locale.ROOT);
    }

    private static Stream<Arguments> withBatchSizes(int... sizes) {
        return DBS.all().stream().flatMap(d -> IntStream.of(sizes)
                .mapToObj(size -> Arguments.of(Named.of(d.kind().toString(), d), size)));
    }

    static Stream<Arguments> poisonCases() {
        return withBatchSizes(1, 50);
    }

    static Stream<Arguments> rebalanceCases() {
        return withBatchSizes(1, 25);
    }

    static Stream<Arguments> orderCases() {
        return withBatchSizes(1, 10);
    }

    private Inbox inbox(String consumer) {
        return Inbox.builder(consumer).tables(tables).maxAttempts(3).build();
    }

    private KafkaInboxConsumer.Builder builder(String consumer, String topic, Handler handler) {
        return KafkaInboxConsumer.builder(inbox(consumer), db.dataSource(), handler)
                .bootstrapServers(KAFKA.bootstrapServers())
                .topics(topic)
                .backoff(FAST_INITIAL, FAST_MAX)
                .pollTimeout(Duration.ofMillis(100));
    }

    private KafkaInboxConsumer start(KafkaInboxConsumer consumer) {
        started.add(consumer);
        consumer.start();
        return consumer;
    }

    private String topic(String hint) {
        String topic = KAFKA.uniqueTopic(hint);
        KAFKA.createTopic(topic, 4);
        KAFKA.createTopic(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        return topic;
    }

    private static void send(String topic, String key, String payload, Map<String, String> headers) {
        send(topic, null, key, payload, headers);
    }

    /** Sends to {@code partition}, or where the key hashes to when it is {@code null}. */
    private static void send(String topic, Integer partition, String key, String payload, Map<String, String> headers) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, partition,
                key == null ? null : key.getBytes(UTF_8), payload.getBytes(UTF_8));
        if (key != null) {
            record.headers().add("idempotency-key", key.getBytes(UTF_8));
        }
        headers.forEach((k, v) -> record.headers().add(k, v.getBytes(UTF_8)));
        try {
            producer.send(record).get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** All records on a topic, read by a throwaway consumer until {@code expected} arrived. */
    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int expected) {
        List<ConsumerRecord<byte[], byte[]>> out = new CopyOnWriteArrayList<>();
        try (KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(
                KAFKA.consumerConfig("reader-" + topic), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            reader.subscribe(List.of(topic));
            await().atMost(WAIT).until(() -> {
                reader.poll(Duration.ofMillis(200)).forEach(out::add);
                return out.size() >= expected;
            });
        }
        return out;
    }

    /**
     * The partitions of each member of {@code group} that owns any, as the group coordinator
     * reports them: a member shows up here once a rebalance handed it partitions.
     */
    private static List<Set<TopicPartition>> ownedByMember(String group) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers()))) {
            ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group)).describedGroups()
                    .get(group).get(30, TimeUnit.SECONDS);
            return description.members().stream().map(m -> m.assignment().topicPartitions())
                    .filter(p -> !p.isEmpty()).toList();
        }
    }

    private static Map<String, String> headers(ConsumerRecord<byte[], byte[]> record) {
        Map<String, String> headers = new HashMap<>();
        for (Header h : record.headers()) {
            headers.put(h.key(), new String(h.value(), UTF_8));
        }
        return headers;
    }

    /**
     * In batch mode the records sent before the consumer starts share transactions, and the
     * poison record's failures roll back only its own attempt.
     */
    @ParameterizedTest(name = "{0}, batchSize {1}")
    @MethodSource("poisonCases")
    void kafka_poisonRecord_deadLetteredWithReasonWhileOthersProcessed(TestDatabase database, int batchSize) {
        use(database);
        String topic = topic("poison-b" + batchSize);
        String name = name("kafka-poison-b" + batchSize);
        Set<Long> transactions = ConcurrentHashMap.newKeySet();
        Handler handler = effects.recordingTransactions(transactions, (tx, m) -> {
            if (m.key().equals("poison")) {
                throw new IllegalStateException("cannot parse order");
            }
            return effects.recorder(name).handle(tx, m);
        });
        CountingListener listener = new CountingListener();

        send(topic, "poison", "garbage", Map.of("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        for (int i = 0; i < 20; i++) {
            send(topic, "ok-" + i, "fine", Map.of());
        }
        start(builder(name, topic, handler).listener(listener).batchSize(batchSize).build());

        List<ConsumerRecord<byte[], byte[]>> dead = readAll(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        await().atMost(WAIT).until(() -> effects.total(name) == 20);

        assertThat(dead).hasSize(1);
        ConsumerRecord<byte[], byte[]> letter = dead.get(0);
        Map<String, String> headers = headers(letter);
        assertThat(new String(letter.value(), UTF_8)).isEqualTo("garbage");
        assertThat(headers).containsEntry("idempotency-key", "poison")
                .containsEntry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                .containsEntry(DeadLetterHeaders.ORIGINAL_TOPIC, topic)
                .containsEntry(DeadLetterHeaders.CONSUMER, name)
                .containsKeys(DeadLetterHeaders.ORIGINAL_PARTITION, DeadLetterHeaders.ORIGINAL_OFFSET);
        assertThat(headers.get(DeadLetterHeaders.REASON)).contains("dead after 3 attempts").contains("cannot parse order");
        assertThat(effects.countsByKey(name)).hasSize(20).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
        assertThat(listener.retries).hasSize(2);
        if (batchSize == 1) {
            assertThat(transactions).as("one transaction per record").hasSize(20);
        } else {
            assertThat(transactions).as("records sharing transactions").hasSizeLessThan(20);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_missingKey_deadLetteredWithReason(TestDatabase database) {
        use(database);
        String topic = topic("missing");
        String name = name("kafka-missing");
        start(builder(name, topic, effects.recorder(name)).build());

        send(topic, null, "no key here", Map.of("traceparent", "00-aa-bb-01"));
        send(topic, "present", "has a key", Map.of());

        List<ConsumerRecord<byte[], byte[]>> dead = readAll(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        await().atMost(WAIT).until(() -> effects.total(name) == 1);

        assertThat(dead).hasSize(1);
        assertThat(new String(dead.get(0).value(), UTF_8)).isEqualTo("no key here");
        assertThat(headers(dead.get(0)).get(DeadLetterHeaders.REASON))
                .isEqualTo("idempotency key header \"idempotency-key\" is missing");
        assertThat(headers(dead.get(0))).containsEntry("traceparent", "00-aa-bb-01");
        assertThat(effects.countsByKey(name)).containsOnlyKeys("present");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_missingKeyUnderTransportCoordinates_processedKeyedByTopicPartitionOffset(TestDatabase database) {
        use(database);
        String topic = topic("coords");
        String name = name("kafka-coords");
        start(builder(name, topic, effects.recorder(name)).keyPolicy(KeyPolicy.TRANSPORT_COORDINATES).build());

        send(topic, null, "no key here", Map.of());

        await().atMost(WAIT).until(() -> effects.total(name) == 1);
        assertThat(effects.countsByKey(name).keySet()).singleElement().asString()
                .matches(java.util.regex.Pattern.quote(topic) + "-[0-3]-0");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_handlerSeesHeadersIncludingTraceContext(TestDatabase database) {
        use(database);
        String topic = topic("headers");
        String name = name("kafka-headers");
        List<Map<String, String>> seen = new CopyOnWriteArrayList<>();
        start(builder(name, topic, (tx, m) -> {
            seen.add(m.headers());
            return null;
        }).build());

        send(topic, "h-1", "x", Map.of("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "tracestate", "vendor=1"));

        await().atMost(WAIT).until(() -> seen.size() == 1);
        assertThat(seen.get(0)).containsEntry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                .containsEntry("tracestate", "vendor=1").containsEntry("idempotency-key", "h-1");
    }

    @ParameterizedTest(name = "{0}, batchSize {1}")
    @MethodSource("rebalanceCases")
    void kafka_rebalanceBetweenTwoConsumers_noLossNoDoubleApply(TestDatabase database, int batchSize) {
        use(database);
        String topic = topic("rebalance-b" + batchSize);
        String name = name("kafka-rebalance-b" + batchSize);
        Handler slow = (tx, m) -> {
            effects.sleep(tx, 0.003); // some work, so rebalances overlap with processing
            return effects.recorder(name).handle(tx, m);
        };
        CountingListener a = new CountingListener();
        CountingListener b = new CountingListener();
        KafkaInboxConsumer first = start(builder(name, topic, slow).listener(a).batchSize(batchSize).build());

        for (int i = 0; i < 150; i++) {
            send(topic, "k-" + i, "p" + i, Map.of());
        }
        await().atMost(WAIT).until(() -> effects.total(name) >= 20);
        start(builder(name, topic, slow).listener(b).batchSize(batchSize).build()); // rebalance
        // Until the second consumer owns partitions, the first may drain every record there is:
        // send the next ones only then, to every partition, so the second has work whatever
        // it was given.
        await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() -> ownedByMember(name).size() == 2);
        for (int i = 150; i < 300; i++) {
            send(topic, i % 4, "k-" + i, "p" + i, Map.of());
        }
        await().atMost(WAIT).until(() -> b.count(Outcome.Status.PROCESSED) > 0);
        first.close(); // leaves mid-stream: another rebalance
        for (int i = 300; i < 400; i++) {
            send(topic, "k-" + i, "p" + i, Map.of());
        }

        await().atMost(WAIT).until(() -> effects.countsByKey(name).size() == 400);
        Map<String, Integer> counts = effects.countsByKey(name);
        assertThat(counts).hasSize(400).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
        assertThat(a.count(Outcome.Status.PROCESSED)).isPositive();
        assertThat(b.count(Outcome.Status.PROCESSED)).isPositive();
        assertThat(a.count(Outcome.Status.PROCESSED) + b.count(Outcome.Status.PROCESSED)).isEqualTo(400);
    }

    /**
     * A rebalance does not wait for the rest of a slow batch: the first consumer takes part in
     * it between two records, so the second gets partitions long before the batch is done.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_consumerJoinsDuringSlowBatch_getsPartitionsBeforeTheBatchEnds(TestDatabase database) {
        use(database);
        String topic = topic("slow-batch");
        String name = name("kafka-slow-batch");
        AtomicBoolean slowDown = new AtomicBoolean(true);
        Handler slow = (tx, m) -> {
            if (slowDown.get()) {
                // 100 records, one batch: 50 s at least, while a rebalance takes a few seconds
                // even on a loaded machine; the test lifts it once it has seen the rebalance
                effects.sleep(tx, 0.5);
            }
            return effects.recorder(name).handle(tx, m);
        };
        for (int i = 0; i < 100; i++) {
            send(topic, "s-" + i, "x", Map.of());
        }
        start(builder(name, topic, slow).build());
        await().atMost(WAIT).until(() -> effects.total(name) >= 1);

        start(builder(name, topic, slow).build());
        List<Set<TopicPartition>> owned = new ArrayList<>();
        await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() -> {
            owned.clear();
            owned.addAll(ownedByMember(name));
            return owned.size() == 2;
        });

        assertThat(effects.total(name)).as("records done when the second consumer got partitions").isLessThan(100);
        assertThat(owned.get(0)).doesNotContainAnyElementsOf(owned.get(1));
        slowDown.set(false);
        await().atMost(WAIT).until(() -> effects.total(name) == 100);
        assertThat(effects.countsByKey(name)).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
    }

    /**
     * Judged by the group's committed offsets, read by an admin client: equal to the end of every
     * partition means a consumer that joins next starts after the last record, so nothing is
     * redelivered.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_gracefulClose_commitsProcessedRecordsSoNothingIsRedelivered(TestDatabase database) throws Exception {
        use(database);
        String topic = topic("graceful");
        String name = name("kafka-graceful");
        KafkaInboxConsumer first = start(builder(name, topic, effects.recorder(name)).build());
        for (int i = 0; i < 10; i++) {
            send(topic, "g-" + i, "x", Map.of());
        }
        await().atMost(WAIT).until(() -> effects.total(name) == 10);
        first.close();
        assertThat(first.isRunning()).isFalse();

        assertThat(committedBehindEnd(name, topic, 10)).as("partitions whose committed offset is behind the end").isEmpty();
        assertThat(effects.countsByKey(name)).hasSize(10).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
    }

    /** The asynchronous commit after a poll lands while the consumer runs, with no later record to carry it. */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_idleAfterRecords_offsetsCommittedWithoutClose(TestDatabase database) {
        use(database);
        String topic = topic("idle-commit");
        String name = name("kafka-idle-commit");
        CountingListener listener = new CountingListener();
        KafkaInboxConsumer consumer = start(builder(name, topic, effects.recorder(name)).listener(listener).build());
        for (int i = 0; i < 10; i++) {
            send(topic, "i-" + i, "x", Map.of());
        }

        await().atMost(WAIT).pollInterval(Duration.ofMillis(250))
                .until(() -> committedBehindEnd(name, topic, 10).isEmpty());
        assertThat(consumer.isRunning()).isTrue();
        assertThat(listener.acks.get()).as("committed partitions reported").isPositive();
        assertThat(effects.countsByKey(name)).hasSize(10).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
    }

    /**
     * A partition handed to a consumer that joins starts after every record its previous owner
     * finished: the joiner sees only the records sent after it, none again.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_consumerJoins_takesOverAfterTheFinishedRecords(TestDatabase database) throws Exception {
        use(database);
        String topic = topic("takeover");
        String name = name("kafka-takeover");
        CountingListener a = new CountingListener();
        CountingListener b = new CountingListener();
        start(builder(name, topic, effects.recorder(name)).listener(a).build());
        for (int i = 0; i < 40; i++) {
            send(topic, i % 4, "t-" + i, "x", Map.of());
        }
        await().atMost(WAIT).until(() -> effects.total(name) == 40);

        start(builder(name, topic, effects.recorder(name)).listener(b).build());
        await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() -> ownedByMember(name).size() == 2);
        for (int i = 40; i < 80; i++) {
            send(topic, i % 4, "t-" + i, "x", Map.of());
        }

        await().atMost(WAIT).until(() -> effects.total(name) == 80);
        assertThat(b.count(Outcome.Status.PROCESSED)).as("records the joiner ran").isPositive();
        assertThat(a.count(Outcome.Status.DUPLICATE) + b.count(Outcome.Status.DUPLICATE)).as("records delivered again")
                .isZero();
        assertThat(effects.countsByKey(name)).hasSize(80).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
    }

    /**
     * The partitions of {@code topic} (4, holding {@code total} records) whose offset committed by
     * {@code group} is short of their end, as an admin client reads them.
     */
    private static Map<TopicPartition, Long> committedBehindEnd(String group, String topic, long total) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers()))) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < 4; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, Long> ends = new HashMap<>();
            admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> ends.put(tp, info.offset()));
            assertThat(ends.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(total);
            Map<TopicPartition, Long> behind = new HashMap<>();
            ends.forEach((tp, end) -> {
                long at = committed.containsKey(tp) ? committed.get(tp).offset() : 0;
                if (at != end) {
                    behind.put(tp, at);
                }
            });
            return behind;
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_failingPartitionPaused_otherPartitionsKeepFlowing(TestDatabase database) {
        use(database);
        String topic = topic("stall");
        String name = name("kafka-stall");
        AtomicBoolean broken = new AtomicBoolean(true);
        Handler handler = (tx, m) -> {
            if (m.key().equals("blocked") && broken.get()) {
                throw new IllegalStateException("downstream unavailable");
            }
            return effects.recorder(name).handle(tx, m);
        };
        start(KafkaInboxConsumer.builder(Inbox.builder(name).tables(tables).maxAttempts(100).build(),
                        db.dataSource(), handler)
                .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).backoff(FAST_INITIAL, FAST_MAX)
                .pollTimeout(Duration.ofMillis(100)).build());

        send(topic, "blocked", "x", Map.of());
        for (int i = 0; i < 30; i++) {
            send(topic, "free-" + i, "x", Map.of());
        }
        // Records on the other three partitions go through while "blocked" keeps failing.
        await().atMost(WAIT).until(() -> effects.total(name) >= 15);
        assertThat(effects.count(name, "blocked")).isZero();

        broken.set(false);
        await().atMost(WAIT).until(() -> effects.total(name) == 31);
        assertThat(effects.countsByKey(name)).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
    }

    /**
     * A consumer on the database inbox's two-phase store: the work runs outside any transaction,
     * once per key (a duplicate record is skipped), a failing attempt is failed in the store and
     * retried, and every offset is committed once the claims are completed.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_twoPhaseStore_workRunsOncePerKeyAndAFailedAttemptIsRetried(TestDatabase database) {
        use(database);
        String topic = topic("two-phase");
        String name = name("kafka-two-phase");
        Map<String, java.util.concurrent.atomic.AtomicInteger> runs = new ConcurrentHashMap<>();
        AtomicBoolean failOnce = new AtomicBoolean(true);
        CountingListener listener = new CountingListener();
        start(KafkaInboxConsumer.builder(inbox(name).twoPhase(db.dataSource()), m -> {
                    if (m.key().equals("flaky") && failOnce.getAndSet(false)) {
                        throw new IllegalStateException("gateway timeout");
                    }
                    runs.computeIfAbsent(m.key(), k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
                    return null;
                })
                .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).backoff(FAST_INITIAL, FAST_MAX)
                .pollTimeout(Duration.ofMillis(100)).listener(listener).build());

        send(topic, 0, "flaky", "x", Map.of());
        for (int i = 0; i < 10; i++) {
            send(topic, i % 4, "t-" + i, "x", Map.of());
            send(topic, i % 4, "t-" + i, "x", Map.of()); // the same message again
        }

        await().atMost(WAIT).until(() -> listener.count(Outcome.Status.DUPLICATE) == 10 && runs.size() == 11);
        assertThat(runs).allSatisfy((k, n) -> assertThat(n.get()).as(k).isEqualTo(1));
        assertThat(listener.retries).hasSize(1);
        assertThat(listener.count(Outcome.Status.PROCESSED)).isEqualTo(11);
    }

    /**
     * One partition, one poll, one transaction per record, each COMMIT sent with the next
     * record's inbox insert: a duplicate in the middle is skipped, a record whose handler fails
     * once is retried, a poison record is dead-lettered, and a record whose COMMIT a deferred
     * trigger refuses twice (in the chained round trip, then alone) is not acked until a later
     * delivery commits it. Every business row exactly once; every offset committed.
     */
    // PostgreSQL only: MariaDB chains no COMMIT to the next insert, nor has a deferred trigger to refuse one
    @Test
    void kafka_chainedCommits_duplicateFailuresAndARefusedCommit_eachRecordOnceAndAllOffsetsCommitted()
            throws Exception {
        use(DBS.postgres());
        String topic = KAFKA.uniqueTopic("chain");
        KAFKA.createTopic(topic, 1);
        KAFKA.createTopic(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        String name = name("kafka-chain");
        effects.refuseCommits(name, "commit-refused", 2);
        Handler handler = effects.chainScenario(name);
        CountingListener listener = new CountingListener();
        CommitCounting ds = new CommitCounting(db.dataSource());
        List<String> keys = Effects.CHAIN_KEYS;
        for (String key : keys) {
            send(topic, 0, key, "x", Map.of());
        }
        start(KafkaInboxConsumer.builder(inbox(name), ds.proxy, handler)
                .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).backoff(FAST_INITIAL, FAST_MAX)
                .pollTimeout(Duration.ofMillis(100)).listener(listener).build());

        List<ConsumerRecord<byte[], byte[]>> dead = readAll(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        await().atMost(WAIT).until(() -> effects.total(name) == 8);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers()))) {
            await().atMost(WAIT).until(() -> {
                OffsetAndMetadata at = admin.listConsumerGroupOffsets(name).partitionsToOffsetAndMetadata()
                        .get(30, TimeUnit.SECONDS).get(tp);
                return at != null && at.offset() == keys.size();
            });
        }

        assertThat(dead).hasSize(1);
        assertThat(headers(dead.get(0))).containsEntry("idempotency-key", "poison");
        assertThat(effects.countsByKey(name)).hasSize(8).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1))
                .doesNotContainKey("poison");
        assertThat(listener.count(Outcome.Status.DUPLICATE)).isEqualTo(1);
        // flaky once, the refused commit once (its second try, alone), poison twice before DEAD
        assertThat(listener.retries).hasSize(4);
        assertThat(ds.chained.get()).as("statements carrying a COMMIT").isPositive();
    }

    /**
     * Records of 8 keys over 4 partitions, some failing their first attempts (a batch with a
     * failure falls back to one transaction per record): per key, the committed effects follow the
     * offsets, each once, for a single record per transaction and for batches.
     */
    @ParameterizedTest(name = "{0}, batchSize {1}")
    @MethodSource("orderCases")
    void kafka_transientFailures_perKeyProcessingFollowsOffsetOrder(TestDatabase database, int batchSize) throws Exception {
        use(database);
        String topic = topic("order-" + batchSize);
        String name = name("kafka-order-" + batchSize);
        String log = db.qualified(db.schema(), "processing_log");
        String id = db.kind() == TestDatabase.Kind.POSTGRESQL ? "bigserial" : "bigint AUTO_INCREMENT";
        try (var c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS " + log + " (id " + id + " PRIMARY KEY, consumer text NOT NULL, payload text NOT NULL)");
        }
        int n = 400;
        Set<String> failing = ConcurrentHashMap.newKeySet();
        for (int i = 7; i < n; i += 37) {
            failing.add("m-" + i);
        }
        // the handler's insert takes the log's next id inside the record's transaction, and one
        // thread processes: the committed ids are the processing order
        Handler handler = (tx, m) -> {
            if (failing.remove(m.key())) {
                throw new IllegalStateException("refused once by the test: " + m.key());
            }
            try (var ps = tx.prepareStatement("INSERT INTO " + log + " (consumer, payload) VALUES (?, ?)")) {
                ps.setString(1, name);
                ps.setString(2, new String(m.payload(), UTF_8));
                ps.executeUpdate();
            }
            return null;
        };
        start(builder(name, topic, handler).batchSize(batchSize).build());
        for (int i = 0; i < n; i++) {
            String key = "acct-" + (i % 8);
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key.getBytes(UTF_8),
                    (key + ":" + i).getBytes(UTF_8));
            record.headers().add("idempotency-key", ("m-" + i).getBytes(UTF_8));
            producer.send(record);
        }
        producer.flush();

        List<String> processed = new ArrayList<>();
        await().atMost(WAIT).until(() -> {
            processed.clear();
            try (var c = db.dataSource().getConnection();
                    var ps = c.prepareStatement("SELECT payload FROM " + log + " WHERE consumer = ? ORDER BY id")) {
                ps.setString(1, name);
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        processed.add(rs.getString(1));
                    }
                }
            }
            return processed.size() >= n;
        });
        assertThat(failing).as("records that were to fail once").isEmpty();
        KeyOrder order = KeyOrder.ofPayloads(processed);
        assertThat(order.records()).isEqualTo(n);
        assertThat(order.duplicates()).as("%s", order).isZero();
        assertThat(order.violations()).as("%s", order).isEmpty();
    }
}
