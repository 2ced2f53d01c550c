package io.txbox.faults;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A consumer process SIGKILLed after its database commit and before its ack / offset commit
 * ({@link ConsumerChild} parks right there and says so). The broker redelivers, and the inbox
 * absorbs the redelivery: exactly one effect, and the redelivery seen as a duplicate. The
 * consumers' inbox on PostgreSQL and on MariaDB.
 */
class ConsumerKillIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(6);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration WAIT = Duration.ofSeconds(60);

    private static TxboxTables tables(TestDatabase db) {
        return Effects.migrated(db);
    }

    /**
     * Each database with each batch size: every combination, since a case costs one child JVM
     * and at most one session timeout.
     */
    static Stream<Arguments> databasesAndBatchSizes() {
        return DBS.all().stream().flatMap(db -> Stream.of(1, 5)
                .map(batchSize -> Arguments.of(Named.of(db.kind().toString(), db), batchSize)));
    }

    /** A consumer name of its own per database and batch size; on Kafka it is the group too. */
    private static String consumerName(String broker, TestDatabase db, int batchSize) {
        return "kill-" + broker + "-" + db.kind().name().toLowerCase(Locale.ROOT) + "-b" + batchSize;
    }

    /**
     * With {@code batchSize} 1 one message; with more, that many messages sent at once so that
     * they share the child's transaction: all of them are committed before the kill and all come
     * back as duplicates.
     */
    @ParameterizedTest(name = "{0}, batchSize {1}")
    @MethodSource("databasesAndBatchSizes")
    void kafka_consumerSigkilledAfterDbCommitBeforeOffsetCommit_groupReassignsAfterSessionTimeout_redeliveryAppliedOnce(
            TestDatabase db, int batchSize) throws Exception {
        TxboxTables tables = tables(db);
        Effects effects = new Effects(db.dataSource());
        String topic = KAFKA.uniqueTopic("consumer-kill");
        Topics.create(KAFKA.bootstrapServers(), topic, 1, Map.of());
        Topics.create(KAFKA.bootstrapServers(), topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1, Map.of());
        String name = consumerName("kafka", db, batchSize);
        long killedAt;
        int committedBeforeKill;
        try (Child child = Child.start(ConsumerChild.class, "consumer-kafka-" + System.nanoTime(), ConsumerChild.READY,
                "kafka", db.jdbcUrl(), db.user(), db.schema(), KAFKA.bootstrapServers(), topic, name,
                Integer.toString(batchSize));
                KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(KAFKA.producerConfig(),
                        new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 1; i <= batchSize; i++) {
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key(i).getBytes(UTF_8),
                        "charge 10".getBytes(UTF_8));
                record.headers().add("idempotency-key", key(i).getBytes(UTF_8));
                producer.send(record);
            }
            producer.flush();

            child.awaitOutput(ConsumerChild.COMMITTED, WAIT);
            committedBeforeKill = effects.distinct(name);
            assertThat(effects.count(name, "order-1")).as("committed before the kill").isEqualTo(1);
            assertThat(committedOffset(name, new TopicPartition(topic, 0))).as("offset not committed").isZero();
            child.kill();
            killedAt = System.nanoTime();
        }

        Outcomes outcomes = new Outcomes();
        InboxConsumer next = KafkaInboxConsumer.builder(inbox(tables, name), db.dataSource(), Effects.recorder(name))
                .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).pollTimeout(Duration.ofMillis(100))
                .batchSize(batchSize).listener(outcomes).build();
        try {
            next.start();
            await().atMost(WAIT).until(() -> outcomes.count(Outcome.Status.DUPLICATE) == committedBeforeKill);
            // The dead member holds the partition until the group stops hearing from it: the
            // redelivery can only come once its session timed out (less the last heartbeat's age).
            Duration reassignedAfter = Duration.ofNanos(outcomes.firstAt.get() - killedAt);
            assertThat(reassignedAfter).isGreaterThanOrEqualTo(
                    ConsumerChild.SESSION_TIMEOUT.minus(ConsumerChild.HEARTBEAT_INTERVAL).minusSeconds(1));
            await().atMost(WAIT).until(() -> committedOffset(name, new TopicPartition(topic, 0)) == batchSize);
        } finally {
            next.close();
        }
        assertThat(effects.count(name, "order-1")).as("applied once despite the redelivery").isEqualTo(1);
        assertAppliedOnce(effects, name, batchSize, committedBeforeKill, outcomes);
    }

    @ParameterizedTest(name = "{0}, batchSize {1}")
    @MethodSource("databasesAndBatchSizes")
    void rabbit_consumerSigkilledAfterDbCommitBeforeAck_redeliveredAndAppliedOnce(TestDatabase db, int batchSize)
            throws Exception {
        TxboxTables tables = tables(db);
        Effects effects = new Effects(db.dataSource());
        String queue = RABBIT.name("consumer-kill");
        String deadLetters = RABBIT.name("consumer-kill-dlx");
        String name = consumerName("rabbit", db, batchSize);
        int committedBeforeKill;
        try (Connection connection = RABBIT.newConnection(); Channel channel = connection.createChannel()) {
            channel.queueDeclare(queue, true, false, false, null);
            // Queued before the child starts, so that its first batch can take several.
            for (int i = 1; i <= batchSize; i++) {
                channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().deliveryMode(2)
                        .headers(Map.of("idempotency-key", key(i))).build(), "charge 10".getBytes(UTF_8));
            }
            try (Child child = Child.start(ConsumerChild.class, "consumer-rabbit-" + System.nanoTime(),
                    // "amqp://host/" would name the empty vhost; the node's default vhost is "/"
                    ConsumerChild.READY, "rabbit", db.jdbcUrl(), db.user(), db.schema(),
                    RABBIT.uri().replaceAll("/$", ""), queue, name,
                    deadLetters, Integer.toString(batchSize))) {
                child.awaitOutput(ConsumerChild.COMMITTED, WAIT);
                committedBeforeKill = effects.distinct(name);
                assertThat(committedBeforeKill).as("committed before the kill").isPositive();
                assertThat(channel.queueDeclarePassive(queue).getMessageCount()).as("held unacked by the child")
                        .isZero();
                child.kill();
            }
            // The node sees the connection drop and puts the unacked messages back.
            await().atMost(WAIT).until(() -> channel.queueDeclarePassive(queue).getMessageCount() == batchSize);
        }

        Outcomes outcomes = new Outcomes();
        InboxConsumer next = RabbitInboxConsumer.builder(inbox(tables, name), db.dataSource(), Effects.recorder(name))
                .connectionFactory(RABBIT.connectionFactory()).queue(queue).deadLetterExchange(deadLetters).declareDeadLetterTopology(false)
                .batchSize(batchSize).listener(outcomes).build();
        try {
            next.start();
            await().atMost(WAIT).until(() -> outcomes.count(Outcome.Status.DUPLICATE) == committedBeforeKill);
            await().atMost(WAIT).until(() -> outcomes.acks.get() == batchSize);
        } finally {
            next.close();
        }
        assertThat(effects.count(name, "order-1")).as("applied once despite the redelivery").isEqualTo(1);
        assertAppliedOnce(effects, name, batchSize, committedBeforeKill, outcomes);
    }

    private static String key(int i) {
        return "order-" + i;
    }

    /**
     * Every message took effect once: those committed before the kill came back as duplicates,
     * the others (none with one message) were processed by the next consumer.
     */
    private static void assertAppliedOnce(Effects effects, String name, int messages, int committedBeforeKill,
            Outcomes outcomes) {
        assertThat(effects.countsByKey(name)).hasSize(messages).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
        assertThat(outcomes.count(Outcome.Status.DUPLICATE)).isEqualTo(committedBeforeKill);
        assertThat(outcomes.count(Outcome.Status.PROCESSED)).isEqualTo(messages - committedBeforeKill);
    }

    private static Inbox inbox(TxboxTables tables, String name) {
        return Inbox.builder(name).tables(tables).maxAttempts(3).build();
    }

    /** The group's committed offset on {@code tp}, 0 when it has none. */
    private static long committedOffset(String group, TopicPartition tp) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers()))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            OffsetAndMetadata at = offsets.get(tp);
            return at == null ? 0 : at.offset();
        }
    }

    /** Outcomes and acks the consumer reported, and when the first outcome came. */
    static final class Outcomes implements ConsumerListener {
        final Map<Outcome.Status, AtomicLong> counts = new ConcurrentHashMap<>();
        final AtomicLong firstAt = new AtomicLong();
        final AtomicLong acks = new AtomicLong();

        @Override
        public void onOutcome(String consumer, Outcome.Status status, Duration took) {
            firstAt.compareAndSet(0, System.nanoTime());
            counts.computeIfAbsent(status, s -> new AtomicLong()).incrementAndGet();
        }

        @Override
        public void onAck(String consumer, int count) {
            acks.addAndGet(count);
        }

        long count(Outcome.Status status) {
            AtomicLong n = counts.get(status);
            return n == null ? 0 : n.get();
        }
    }
}
