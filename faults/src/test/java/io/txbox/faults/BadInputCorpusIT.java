package io.txbox.faults;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bad-input corpus, through the real Kafka and RabbitMQ consumers: each case ends either in
 * exactly one effect (a valid but unusual key) or in a dead letter whose reason names the
 * problem. A normal message sent right behind each bad one is processed: nothing wedges. Every
 * case runs on PostgreSQL and MariaDB, each with its own topic, queue and consumers.
 */
class BadInputCorpusIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final String KEY_HEADER = "idempotency-key";
    static final String CASE_HEADER = "corpus-case";
    static final int BIG = 20 * 1024 * 1024;
    static final int TOPIC_MAX_BYTES = 25 * 1024 * 1024;
    static final Duration FAST_INITIAL = Duration.ofMillis(100);
    static final Duration FAST_MAX = Duration.ofMillis(400);

    static KafkaProducer<byte[], byte[]> producer;
    static Connection rabbit;
    static Channel channel;
    /** The migrated tables, effects, topic, queue and running consumers of each database. */
    static final Map<TestDatabase.Kind, Side> sides = new ConcurrentHashMap<>();
    /** Dead letters read so far, by dead-letter queue and corpus case name. */
    static final Map<String, Map<String, String>> deadLetters = new ConcurrentHashMap<>();

    /** One delivery of the corpus: its key header (raw bytes, or absent) plus extra headers and payload. */
    record Case(String name, byte @Nullable [] key, Map<String, Object> headers, byte[] payload,
            @Nullable String reasonPart, byte @Nullable [] priorPayload) {
        boolean deadLetters() {
            return reasonPart != null;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static Case ok(String name, String key, Map<String, Object> headers) {
        return new Case(name, key.getBytes(UTF_8), headers, ("payload of " + name).getBytes(UTF_8), null, null);
    }

    static Case dead(String name, byte @Nullable [] key, String reasonPart) {
        return new Case(name, key, Map.of(), ("payload of " + name).getBytes(UTF_8), reasonPart, null);
    }

    /** One database's share of the suite. */
    record Side(TestDatabase db, TxboxTables tables, Effects effects, String topic, String queue,
            InboxConsumer kafkaConsumer, InboxConsumer rabbitConsumer) {
        String target(String broker) {
            return broker.equals("kafka") ? topic : queue;
        }
    }

    static Stream<Arguments> corpus() {
        Map<String, Object> kafkaJunk = new LinkedHashMap<>();
        kafkaJunk.put("traceparent", "not-a-trace-context".getBytes(UTF_8));
        kafkaJunk.put("bad-utf8", new byte[] {(byte) 0xff, (byte) 0xfe, 0x00});
        kafkaJunk.put("empty", new byte[0]);
        kafkaJunk.put("", "empty-name".getBytes(UTF_8));
        Map<String, Object> rabbitJunk = new LinkedHashMap<>();
        rabbitJunk.put("traceparent", "not-a-trace-context");
        rabbitJunk.put("bad-utf8", new byte[] {(byte) 0xff, (byte) 0xfe, 0x00});
        rabbitJunk.put("nested", Map.of("a", List.of(1, 2, Map.of("b", "c"))));
        rabbitJunk.put("number", 42L);
        rabbitJunk.put("flag", true);
        rabbitJunk.put("nothing", null);
        List<Case> common = List.of(
                dead("missing-key", null, "is missing"),
                dead("empty-key", new byte[0], "is empty"),
                dead("10kb-key", "k".repeat(10 * 1024).getBytes(UTF_8), "more than the limit of 255"),
                dead("non-utf8-key", new byte[] {'k', (byte) 0xc3, 0x28, (byte) 0xa0}, "not valid UTF-8"),
                dead("control-char-key", "order\n1".getBytes(UTF_8), "control character"),
                ok("emoji-key", "order-\uD83C\uDF89-\uD83D\uDE80-1", Map.of()),
                new Case("key-reused-other-payload", "reused-1".getBytes(UTF_8), Map.of(), "second".getBytes(UTF_8),
                        "different payload fingerprint", "first".getBytes(UTF_8)));
        Stream<Arguments> kafka = Stream.concat(common.stream(),
                        Stream.of(ok("malformed-headers", "junk-headers-k", kafkaJunk)))
                .map(c -> Arguments.of("kafka", c));
        Stream<Arguments> rabbitCases = Stream.concat(common.stream(), Stream.of(
                        ok("malformed-headers", "junk-headers-r", rabbitJunk),
                        new Case("key-header-is-a-table", null, Map.of(KEY_HEADER, Map.of("k", "v")),
                                "x".getBytes(UTF_8), "is missing", null)))
                .map(c -> Arguments.of("rabbit", c));
        List<Arguments> perBroker = Stream.concat(kafka, rabbitCases).toList();
        return Stream.of(TestDatabase.Kind.values()).flatMap(kind -> perBroker.stream()
                .map(a -> Arguments.of(Named.of(kind.toString(), kind), a.get()[0], a.get()[1])));
    }

    @BeforeAll
    static void setUp() throws Exception {
        Map<String, Object> pc = new HashMap<>(KAFKA.producerConfig());
        pc.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, TOPIC_MAX_BYTES);
        pc.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L * 1024 * 1024);
        producer = new KafkaProducer<>(pc, new ByteArraySerializer(), new ByteArraySerializer());
        rabbit = RABBIT.newConnection();
        channel = rabbit.createChannel();
        for (TestDatabase db : DBS.all()) {
            TxboxTables tables = TxboxTables.inSchema(db.schema());
            TxboxMigrations.migrate(db.dataSource(), tables);
            Effects effects = new Effects(db.dataSource());
            String topic = kafkaTopic(hint(db, "corpus"));
            String queue = rabbitQueue(hint(db, "corpus"));
            sides.put(db.kind(), new Side(db, tables, effects, topic, queue,
                    kafkaConsumer(db, tables, "corpus-kafka", topic), rabbitConsumer(db, tables, "corpus-rabbit", queue)));
        }
    }

    @AfterAll
    static void tearDown() throws Exception {
        for (Side side : sides.values()) {
            side.kafkaConsumer().close();
            side.rabbitConsumer().close();
        }
        producer.close();
    }

    /** Rabbit names are fixed per class and hint, so each database's queues and exchanges get their own hint. */
    static String hint(TestDatabase db, String what) {
        return what + "-" + db.kind().name().toLowerCase(Locale.ROOT);
    }

    static String kafkaTopic(String hint) {
        String t = KAFKA.uniqueTopic(hint);
        Map<String, String> config = Map.of("max.message.bytes", String.valueOf(TOPIC_MAX_BYTES));
        Topics.create(KAFKA.bootstrapServers(), t, 4, config);
        Topics.create(KAFKA.bootstrapServers(), t + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1, config);
        return t;
    }

    static InboxConsumer kafkaConsumer(TestDatabase db, TxboxTables tables, String name, String t) {
        InboxConsumer c = KafkaInboxConsumer.builder(Inbox.builder(name).tables(tables).maxAttempts(3).build(),
                        db.dataSource(), Effects.recorder(name))
                .bootstrapServers(KAFKA.bootstrapServers()).topics(t).groupId(t + "-inbox").backoff(FAST_INITIAL, FAST_MAX)
                .pollTimeout(Duration.ofMillis(100)).build();
        c.start();
        return c;
    }

    static String rabbitQueue(String hint) throws Exception {
        String q = RABBIT.name(hint);
        RABBIT.track(q + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX); // the consumer declares it
        channel.queueDeclare(q, true, false, false, null);
        channel.queuePurge(q);
        return q;
    }

    static InboxConsumer rabbitConsumer(TestDatabase db, TxboxTables tables, String name, String q) {
        InboxConsumer c = RabbitInboxConsumer.builder(Inbox.builder(name).tables(tables).maxAttempts(3).build(),
                        db.dataSource(), Effects.recorder(name))
                .connectionFactory(RABBIT.connectionFactory()).queue(q).deadLetterExchange(RABBIT.name(hint(db, name + "-dlx")))
                .prefetch(1).backoff(FAST_INITIAL, FAST_MAX).build();
        c.start();
        return c;
    }

    @ParameterizedTest(name = "{0} {1}: {2}")
    @MethodSource("corpus")
    void corpus_badDeliveryThroughRealConsumer_endsInOneEffectOrDeadLetterWithReason_andNothingWedges(
            TestDatabase.Kind kind, String broker, Case c) throws Exception {
        Side side = sides.get(kind);
        Effects effects = side.effects();
        String target = side.target(broker);
        String consumer = broker.equals("kafka") ? "corpus-kafka" : "corpus-rabbit";
        if (c.priorPayload() != null) {
            sendTo(broker, target, c.name(), c.name() + "-prior", c.key(), Map.of(), c.priorPayload());
            await().atMost(Duration.ofSeconds(45)).until(() -> effects.count(consumer, new String(c.key(), UTF_8)) == 1);
        }
        int effectsBefore = total(effects, consumer);
        sendTo(broker, target, c.name(), c.name(), c.key(), c.headers(), c.payload());
        if (!c.deadLetters()) {
            sendTo(broker, target, c.name(), c.name() + "-again", c.key(), c.headers(), c.payload()); // a redelivery
        }
        String after = "after-" + c.name();
        sendTo(broker, target, c.name(), "normal", after.getBytes(UTF_8), Map.of(), "fine".getBytes(UTF_8));

        await().atMost(Duration.ofSeconds(45)).until(() -> effects.count(consumer, after) == 1);
        if (c.deadLetters()) {
            Map<String, String> dead = readDeadLetter(broker, target, c.name());
            assertThat(dead.get(DeadLetterHeaders.REASON)).contains(c.reasonPart());
            assertThat(dead.get(DeadLetterHeaders.CONSUMER)).isEqualTo(consumer);
            // the dead-lettered delivery left no effect: only the normal one behind it did
            assertThat(total(effects, consumer)).as("effects added by the bad delivery and the normal one").isEqualTo(effectsBefore + 1);
            if (c.key() != null) {
                assertThat(effects.count(consumer, new String(c.key(), UTF_8))).isEqualTo(c.priorPayload() == null ? 0 : 1);
            }
        } else {
            assertThat(effects.count(consumer, new String(c.key(), UTF_8))).isEqualTo(1);
            assertThat(total(effects, consumer)).as("one effect for the delivery and its redelivery, one for the normal one")
                    .isEqualTo(effectsBefore + 2);
        }
    }

    private static int total(Effects effects, String consumer) {
        return effects.countsByKey(consumer).values().stream().mapToInt(Integer::intValue).sum();
    }

    static Stream<Arguments> databasesAndBrokers() {
        return Stream.of(TestDatabase.Kind.values()).flatMap(kind -> Stream.of("kafka", "rabbit")
                .map(broker -> Arguments.of(Named.of(kind.toString(), kind), broker)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("databasesAndBrokers")
    void bigPayload_20Mb_deadLetteredWithReason_andPartitionOrQueueKeepsFlowing(TestDatabase.Kind kind, String broker)
            throws Exception {
        Side side = sides.get(kind);
        String consumer = "big-" + broker;
        String target = broker.equals("kafka") ? kafkaTopic(hint(side.db(), "big")) : rabbitQueue(hint(side.db(), "big"));
        try (InboxConsumer c = broker.equals("kafka")
                ? kafkaConsumer(side.db(), side.tables(), consumer, target)
                : rabbitConsumer(side.db(), side.tables(), consumer, target)) {
            bigPayloadCase(side.effects(), broker, target, consumer);
        }
    }

    private void bigPayloadCase(Effects effects, String broker, String target, String consumer) throws Exception {
        byte[] big = new byte[BIG];
        java.util.Arrays.fill(big, (byte) 'x');
        sendTo(broker, target, "20mb", "20mb", "big-1".getBytes(UTF_8), Map.of(), big);
        sendTo(broker, target, "20mb", "normal", "after-big".getBytes(UTF_8), Map.of(), "fine".getBytes(UTF_8));
        await().atMost(Duration.ofSeconds(60)).until(() -> effects.count(consumer, "after-big") == 1);
        assertThat(effects.count(consumer, "big-1")).isZero();
        Map<String, String> dead = readDeadLetter(broker, target, "20mb");
        assertThat(dead.get(DeadLetterHeaders.REASON)).contains("more than maxPayloadBytes");
    }

    private static void sendTo(String broker, String target, String caseName, String part, byte @Nullable [] key,
            Map<String, Object> headers, byte[] payload) throws Exception {
        if (broker.equals("kafka")) {
            // the record key keeps the bad delivery and the normal one behind it in one partition
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(target, caseName.getBytes(UTF_8), payload);
            if (key != null) {
                r.headers().add(KEY_HEADER, key);
            }
            headers.forEach((k, v) -> r.headers().add(k, (byte[]) v));
            r.headers().add(CASE_HEADER, (caseName + "/" + part).getBytes(UTF_8));
            producer.send(r).get();
        } else {
            Map<String, Object> h = new HashMap<>(headers);
            if (key != null) {
                h.put(KEY_HEADER, key);
            }
            h.put(CASE_HEADER, caseName + "/" + part);
            channel.basicPublish("", target, true,
                    new AMQP.BasicProperties.Builder().deliveryMode(2).headers(h).build(), payload);
        }
    }

    private static Map<String, String> readDeadLetter(String broker, String target, String caseName) {
        return broker.equals("kafka") ? readKafkaDeadLetter(target, caseName) : readRabbitDeadLetter(target, caseName);
    }

    private static Map<String, String> readKafkaDeadLetter(String t, String caseName) {
        String dlt = t + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX;
        String wanted = caseName + "/" + caseName;
        List<ConsumerRecord<byte[], byte[]>> records = Topics.readUntil(KAFKA.bootstrapServers(), dlt,
                rs -> Topics.header(rs, CASE_HEADER).contains(wanted), Duration.ofSeconds(45));
        ConsumerRecord<byte[], byte[]> r = records.stream()
                .filter(x -> wanted.equals(Topics.header(List.of(x), CASE_HEADER).get(0))).findFirst().orElseThrow();
        Map<String, String> headers = new HashMap<>();
        for (Header h : r.headers()) {
            headers.put(h.key(), h.value() == null ? null : new String(h.value(), UTF_8));
        }
        return headers;
    }

    private static Map<String, String> readRabbitDeadLetter(String q, String caseName) {
        String dlq = q + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX;
        String wanted = dlq + " " + caseName + "/" + caseName;
        await().atMost(Duration.ofSeconds(45)).pollInterval(Duration.ofMillis(100)).until(() -> {
            GetResponse r;
            while ((r = channel.basicGet(dlq, true)) != null) {
                Map<String, String> headers = new HashMap<>();
                r.getProps().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
                deadLetters.put(dlq + " " + headers.getOrDefault(CASE_HEADER, "?"), headers);
            }
            return deadLetters.containsKey(wanted);
        });
        return deadLetters.get(wanted);
    }
}
