package io.txbox.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.testkit.TestDynamo;
import io.txbox.testkit.TestKafka;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * The Kafka consumer on the DynamoDB store, end to end, with no relational database: a consumer
 * process SIGKILLed after the store's complete and before its offset commit, or in the middle of
 * its handler, and a replay of the whole topic. Each effect happens once.
 */
class DynamoConsumerIT {
    @RegisterExtension
    static final TestDynamo DYNAMO = TestDynamo.perClass();

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    static final Duration WAIT = Duration.ofSeconds(90);

    static DynamoDbClient client;
    static String table;
    static Effects effects;

    @BeforeAll
    static void setUp() {
        client = Clients.of(DYNAMO.endpoint());
        table = DYNAMO.table("inbox");
        DynamoStore.createTable(client, table);
        effects = new Effects(client, DYNAMO.table("effects"));
    }

    @AfterAll
    static void close() {
        client.close();
    }

    @Test
    void kafka_killedAfterCompleteBeforeOffsetCommit_redeliveryIsADuplicate_andAReplayRunsNothingAgain()
            throws Exception {
        String topic = topic("dynamo-kill");
        String name = "dynamo-kill";
        try (Child child = startChild(topic, name); KafkaProducer<byte[], byte[]> producer = producer()) {
            send(producer, topic, "order-1");
            child.awaitOutput(ConsumerChild.COMPLETED, WAIT);
            assertThat(effects.byKey(name)).isEqualTo(Map.of("order-1", 1));
            assertThat(committedOffset(name, new TopicPartition(topic, 0))).as("offset not committed").isZero();
            child.kill();
        }

        Outcomes redelivered = new Outcomes();
        InboxConsumer next = consumer(topic, name, name, redelivered);
        try {
            next.start();
            await().atMost(WAIT).until(() -> redelivered.count(Outcome.Status.DUPLICATE) == 1
                    && committedOffset(name, new TopicPartition(topic, 0)) == 1);
        } finally {
            next.close();
        }

        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            send(producer, topic, "order-2");
        }
        Outcomes replayed = new Outcomes();
        InboxConsumer replay = consumer(topic, name, name + "-replay", replayed); // a new group reads from the start
        try {
            replay.start();
            await().atMost(WAIT).until(() -> replayed.count(Outcome.Status.DUPLICATE) + replayed.count(
                    Outcome.Status.PROCESSED) == 2);
        } finally {
            replay.close();
        }
        assertThat(replayed.count(Outcome.Status.DUPLICATE)).as("order-1 replayed from the store").isEqualTo(1);
        assertThat(effects.byKey(name)).isEqualTo(Map.of("order-1", 1, "order-2", 1));
        assertThat(redelivered.count(Outcome.Status.PROCESSED)).isZero();
    }

    @Test
    void kafka_killedInTheMiddleOfTheHandler_theNextConsumerTakesTheKeyOverAfterTheLease_andRunsItOnce()
            throws Exception {
        String topic = topic("dynamo-mid");
        String name = "dynamo-mid";
        long killedAt;
        try (Child child = startChild(topic, name); KafkaProducer<byte[], byte[]> producer = producer()) {
            send(producer, topic, "mid-1");
            child.awaitOutput(ConsumerChild.MID_HANDLER, WAIT);
            child.kill();
            killedAt = System.nanoTime();
        }
        assertThat(effects.byKey(name)).as("the crash came before the effect").isEmpty();

        Outcomes outcomes = new Outcomes();
        InboxConsumer next = consumer(topic, name, name, outcomes);
        try {
            next.start();
            await().atMost(WAIT).until(() -> outcomes.count(Outcome.Status.PROCESSED) == 1
                    && committedOffset(name, new TopicPartition(topic, 0)) == 1);
            assertThat(Duration.ofNanos(outcomes.processedAt.get() - killedAt)).as("not before the lease ran out")
                    .isGreaterThanOrEqualTo(ConsumerChild.LEASE.minusMillis(500));
        } finally {
            next.close();
        }
        assertThat(effects.byKey(name)).isEqualTo(Map.of("mid-1", 1));
    }

    private static String topic(String hint) {
        String topic = KAFKA.uniqueTopic(hint);
        KAFKA.createTopic(topic, 1);
        KAFKA.createTopic(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        return topic;
    }

    private static Child startChild(String topic, String name) throws Exception {
        return Child.start(ConsumerChild.class, "dynamo-consumer-" + System.nanoTime(), ConsumerChild.READY,
                DYNAMO.endpoint().toString(), table, DYNAMO.table("effects"), KAFKA.bootstrapServers(), topic, name);
    }

    private static InboxConsumer consumer(String topic, String name, String group, Outcomes outcomes) {
        DynamoStore store = DynamoStore.builder(name).client(client).table(table).lease(ConsumerChild.LEASE)
                .clockSkewMargin(Duration.ZERO).build();
        return KafkaInboxConsumer.builder(store, m -> {
                    effects.record(name, m.key());
                    return ("done " + m.key()).getBytes(UTF_8);
                })
                .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).groupId(group)
                .consumerProperty("auto.offset.reset", "earliest")
                .pollTimeout(Duration.ofMillis(100)).backoff(Duration.ofMillis(200), Duration.ofSeconds(1))
                .listener(outcomes).build();
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        return new KafkaProducer<>(KAFKA.producerConfig(), new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, String key) throws Exception {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key.getBytes(UTF_8),
                "charge 10".getBytes(UTF_8));
        record.headers().add("idempotency-key", key.getBytes(UTF_8));
        producer.send(record).get(30, TimeUnit.SECONDS);
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

    /** Outcomes the consumer reported, and when the first PROCESSED came. */
    static final class Outcomes implements ConsumerListener {
        final Map<Outcome.Status, AtomicLong> counts = new ConcurrentHashMap<>();
        final AtomicLong processedAt = new AtomicLong();

        @Override
        public void onOutcome(String consumer, Outcome.Status status, Duration took) {
            if (status == Outcome.Status.PROCESSED) {
                processedAt.compareAndSet(0, System.nanoTime());
            }
            counts.computeIfAbsent(status, s -> new AtomicLong()).incrementAndGet();
        }

        long count(Outcome.Status status) {
            AtomicLong n = counts.get(status);
            return n == null ? 0 : n.get();
        }
    }
}
