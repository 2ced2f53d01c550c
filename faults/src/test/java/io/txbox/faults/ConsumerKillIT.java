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
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A consumer process SIGKILLed after its database commit and before its ack / offset commit
 * ({@link ConsumerChild} parks right there and says so). The broker redelivers, and the inbox
 * absorbs the redelivery: exactly one effect, and the redelivery seen as a duplicate.
 */
class ConsumerKillIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(6);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration WAIT = Duration.ofSeconds(60);

    static TxboxTables tables;
    static Effects effects;

    @BeforeAll
    static void setUp() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        effects = new Effects(PG.dataSource());
    }

    /**
     * With {@code batchSize} 1 one message; with more, that many messages sent at once so that
     * they share the child's transaction: all of them are committed before the kill and all come
     * back as duplicates.
     */
    @ParameterizedTest(name = "batchSize {0}")
    @ValueSource(ints = {1, 5})
    void kafka_consumerSigkilledAfterDbCommitBeforeOffsetCommit_groupReassignsAfterSessionTimeout_redeliveryAppliedOnce(
            int batchSize) throws Exception {
        String topic = KAFKA.uniqueTopic("consumer-kill");
        Topics.create(KAFKA.bootstrapServers(), topic, 1, Map.of());
        Topics.create(KAFKA.bootstrapServers(), topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1, Map.of());
        String name = "kill-kafka-b" + batchSize;
        long killedAt;
        int committedBeforeKill;
        try (Child child = Child.start(ConsumerChild.class, "consumer-kafka-" + System.nanoTime(), ConsumerChild.READY,
                "kafka", PG.jdbcUrl(), PG.user(), PG.schema(), KAFKA.bootstrapServers(), topic, name,
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
        InboxConsumer next = KafkaInboxConsumer.builder(inbox(name), PG.dataSource(), Effects.recorder(name))
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
        assertAppliedOnce(name, batchSize, committedBeforeKill, outcomes);
    }

    @ParameterizedTest(name = "batchSize {0}")
    @ValueSource(ints = {1, 5})
    void rabbit_consumerSigkilledAfterDbCommitBeforeAck_redeliveredAndAppliedOnce(int batchSize) throws Exception {
        String queue = RABBIT.name("consumer-kill");
        String deadLetters = RABBIT.name("consumer-kill-dlx");
        String name = "kill-rabbit-b" + batchSize;
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
                    ConsumerChild.READY, "rabbit", PG.jdbcUrl(), PG.user(), PG.schema(),
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
        InboxConsumer next = RabbitInboxConsumer.builder(inbox(name), PG.dataSource(), Effects.recorder(name))
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
        assertAppliedOnce(name, batchSize, committedBeforeKill, outcomes);
    }

    private static String key(int i) {
        return "order-" + i;
    }

    /**
     * Every message took effect once: those committed before the kill came back as duplicates,
     * the others (none with one message) were processed by the next consumer.
     */
    private static void assertAppliedOnce(String name, int messages, int committedBeforeKill, Outcomes outcomes) {
        assertThat(effects.countsByKey(name)).hasSize(messages).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1));
        assertThat(outcomes.count(Outcome.Status.DUPLICATE)).isEqualTo(committedBeforeKill);
        assertThat(outcomes.count(Outcome.Status.PROCESSED)).isEqualTo(messages - committedBeforeKill);
    }

    private static Inbox inbox(String name) {
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
