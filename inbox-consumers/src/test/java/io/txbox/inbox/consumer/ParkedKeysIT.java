package io.txbox.inbox.consumer;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboxMaintenance;
import io.txbox.inbox.ParkedKey;
import io.txbox.inbox.Resolution;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.inbox.consumer.micrometer.MicrometerConsumerListener;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestRabbit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Sequenced dead letters ({@code parkKeys(true)}) on both brokers and both databases, in one
 * transaction per record (chained on PostgreSQL), batch and two-phase mode: a poison message
 * parks its ordering key, later messages of the key wait in order while other keys flow, across
 * a restart and (Kafka) a rebalance; the operator's retry runs them in order, each once; a skip
 * drops the dead one for good. Every oracle reads the effects table back from the database.
 */
class ParkedKeysIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration WAIT = Duration.ofSeconds(60);
    static final Map<TestDatabase.Kind, TxboxTables> MIGRATED = new ConcurrentHashMap<>();
    static KafkaProducer<byte[], byte[]> producer;
    static com.rabbitmq.client.Connection publisher;
    static Channel channel;

    enum Broker { KAFKA, RABBITMQ }

    enum Mode { RECORD, BATCH, TWO_PHASE }

    final List<InboxConsumer> started = new ArrayList<>();
    final Set<String> poison = ConcurrentHashMap.newKeySet();

    static Stream<Arguments> everyMode() {
        List<Arguments> out = new ArrayList<>();
        for (TestDatabase db : DBS.all()) {
            for (Broker b : Broker.values()) {
                for (Mode m : Mode.values()) {
                    out.add(Arguments.of(db, b, m));
                }
            }
        }
        return out.stream();
    }

    static Stream<Arguments> everyBroker() {
        return DBS.all().stream().flatMap(db -> Stream.of(Broker.values()).map(b -> Arguments.of(db, b)));
    }

    @AfterEach
    void closeConsumers() {
        started.forEach(InboxConsumer::close);
    }

    @AfterAll
    static void closeClients() throws Exception {
        if (producer != null) {
            producer.close();
        }
        if (publisher != null) {
            publisher.close();
        }
    }

    @ParameterizedTest(name = "{0} {1} {2}")
    @MethodSource("everyMode")
    void poison_parksItsKey_othersFlow_acrossRestart_retryRunsTheKeyInOrder(TestDatabase db, Broker broker, Mode mode)
            throws Exception {
        Fixture f = new Fixture(db, broker, mode);
        poison.add("A-1");
        f.send("A", "A-1");
        InboxConsumer first = start(f.build());
        f.untilParked(first, "A-1");
        f.send("A", "A-2");
        f.send("B", "B-1");
        f.send("A", "A-3");
        f.send("C", "C-1");
        f.send("B", "B-2");

        await().atMost(WAIT).until(() -> f.effects().containsAll(List.of("B-1", "B-2", "C-1"))
                && first.parkedKeys().stats().messages() == 3);
        assertThat(f.effects()).noneMatch(k -> k.startsWith("A-"));
        List<ParkedKey> parked = first.parkedKeys().list(10);
        assertThat(parked).singleElement().satisfies(k -> {
            assertThat(k.orderingKey()).isEqualTo("A");
            assertThat(k.deadMessageKey()).isEqualTo("A-1");
            assertThat(k.messages()).isEqualTo(3);
        });

        // A restart (and on Kafka a second member of the group, so a rebalance) while parked.
        first.close();
        f.send("A", "A-4");
        f.send("B", "B-3");
        InboxConsumer second = start(f.build());
        if (broker == Broker.KAFKA) {
            start(f.build());
        }
        await().atMost(WAIT).until(() -> f.effects().contains("B-3") && second.parkedKeys().stats().messages() == 4);
        assertThat(f.effects()).noneMatch(k -> k.startsWith("A-"));
        assertThat(second.parkedKeys().stats().oldestAge()).isPositive();

        poison.clear();
        Resolution r = second.retryParked("A");
        assertThat(r.released()).isTrue();
        assertThat(r.ran()).isEqualTo(4);
        assertThat(second.parkedKeys().list(10)).isEmpty();

        // Released: new messages of the key run at once, after the parked ones; a redelivery is a duplicate.
        f.send("A", "A-2");
        f.send("A", "A-5");
        await().atMost(WAIT).until(() -> f.effects().contains("A-5"));
        assertThat(f.effects().stream().filter(k -> k.startsWith("A-")))
                .containsExactly("A-1", "A-2", "A-3", "A-4", "A-5");
        assertThat(f.effects()).doesNotHaveDuplicates()
                .containsExactlyInAnyOrder("A-1", "A-2", "A-3", "A-4", "A-5", "B-1", "B-2", "B-3", "C-1");
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("everyBroker")
    void requestedSkip_dropsTheDeadMessage_runsTheRest_andItsRedeliveryIsADuplicate(TestDatabase db, Broker broker)
            throws Exception {
        Fixture f = new Fixture(db, broker, Mode.RECORD);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        f.listener = new MicrometerConsumerListener(registry);
        poison.add("D-1");
        f.send("D", "D-1");
        InboxConsumer consumer = start(f.build());
        f.untilParked(consumer, "D-1");
        f.send("D", "D-2");
        f.send("E", "E-1");
        await().atMost(WAIT).until(() -> f.effects().contains("E-1") && consumer.parkedKeys().stats().messages() == 2);
        await().atMost(WAIT).until(() -> gauge(registry, "txbox.consumer.parked.messages", f.consumer) == 2
                && gauge(registry, "txbox.consumer.parked.keys", f.consumer) == 1
                && gauge(registry, "txbox.consumer.parked.oldest.age", f.consumer) > 0);

        // What the admin CLI does: a request the running consumer carries out.
        InboxMaintenance ops = InboxMaintenance.of(db.dataSource(), f.tables);
        assertThat(ops.listParked(f.consumer, 10)).singleElement()
                .satisfies(k -> assertThat(k.deadMessageKey()).isEqualTo("D-1"));
        assertThat(ops.requestParked(f.consumer, "D", ParkedKey.Action.SKIP)).isTrue();
        await().atMost(WAIT).until(() -> f.effects().contains("D-2"));
        await().atMost(WAIT).until(() -> ops.listParked(f.consumer, 10).isEmpty());

        await().atMost(WAIT).until(() -> gauge(registry, "txbox.consumer.parked.messages", f.consumer) == 0);

        f.send("D", "D-1"); // redelivered after the skip: a duplicate, never run
        f.send("D", "D-3");
        await().atMost(WAIT).until(() -> f.effects().contains("D-3"));
        assertThat(f.effects()).containsExactly("E-1", "D-2", "D-3");
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String consumer) {
        io.micrometer.core.instrument.Gauge g = registry.find(name).tag("consumer", consumer).gauge();
        return g == null ? -1 : g.value();
    }

    private InboxConsumer start(InboxConsumer consumer) {
        started.add(consumer);
        consumer.start();
        return consumer;
    }

    /** One test's consumer name, topic or queue, tables and effects. */
    final class Fixture {
        final TestDatabase db;
        final Broker broker;
        final Mode mode;
        final String consumer;
        final TxboxTables tables;
        final String destination;
        ConsumerListener listener = ConsumerListener.NONE;

        Fixture(TestDatabase db, Broker broker, Mode mode) throws Exception {
            this.db = db;
            this.broker = broker;
            this.mode = mode;
            this.consumer = "parked-" + broker.name().toLowerCase() + "-" + UUID.randomUUID().toString().substring(0, 8);
            this.tables = MIGRATED.computeIfAbsent(db.kind(), k -> {
                TxboxTables t = TxboxTables.inSchema(db.schema());
                TxboxMigrations.migrate(db.dataSource(), t);
                execute(db.dataSource(), "create table parked_effects (id bigint "
                        + (db.kind() == TestDatabase.Kind.MARIADB ? "auto_increment" : "generated always as identity")
                        + " primary key, consumer varchar(255) not null, message_key varchar(255) not null)");
                return t;
            });
            if (broker == Broker.KAFKA) {
                destination = KAFKA.uniqueTopic("parked");
                KAFKA.createTopic(destination, 4);
                KAFKA.createTopic(destination + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
                synchronized (ParkedKeysIT.class) {
                    if (producer == null) {
                        producer = new KafkaProducer<>(KAFKA.producerConfig(), new ByteArraySerializer(),
                                new ByteArraySerializer());
                    }
                }
            } else {
                synchronized (ParkedKeysIT.class) {
                    if (publisher == null) {
                        publisher = RABBIT.connectionFactory().newConnection("txbox-test-parked-publisher");
                        channel = publisher.createChannel();
                    }
                }
                destination = RABBIT.name("parked-" + consumer);
                channel.queueDeclare(destination, true, false, false, null);
                // A topic exchange, so that each message's routing key is its ordering key.
                channel.exchangeDeclare(destination, BuiltinExchangeType.TOPIC, true);
                channel.queueBind(destination, destination, "#");
                RABBIT.track(destination + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX);
                RABBIT.track(destination + "-dlx");
            }
        }

        /**
         * On RabbitMQ, until {@code dead} went DEAD: there a failed message is requeued for its
         * retry, and the key's later messages run meanwhile; the key parks once it is DEAD. On
         * Kafka the partition waits for the retry, so the key's order holds from the start and
         * its later messages are sent at once.
         */
        void untilParked(InboxConsumer consumer, String dead) {
            if (broker == Broker.RABBITMQ) {
                await().atMost(WAIT).until(() -> consumer.parkedKeys().list(10).stream()
                        .anyMatch(k -> dead.equals(k.deadMessageKey())));
            }
        }

        void send(String orderingKey, String messageKey) throws Exception {
            if (broker == Broker.KAFKA) {
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(destination, orderingKey.getBytes(UTF_8),
                        messageKey.getBytes(UTF_8));
                record.headers().add("idempotency-key", messageKey.getBytes(UTF_8));
                producer.send(record).get();
            } else {
                AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                        .headers(Map.of("idempotency-key", messageKey)).deliveryMode(2).build();
                channel.basicPublish(destination, orderingKey, props, messageKey.getBytes(UTF_8));
            }
        }

        InboxConsumer build() {
            Inbox inbox = Inbox.builder(consumer).tables(tables).maxAttempts(2).build();
            DataSource ds = db.dataSource();
            Handler handler = (tx, m) -> {
                effect(tx, m.key());
                return null;
            };
            io.txbox.inbox.TwoPhaseStore store = inbox.twoPhase(ds);
            TwoPhaseHandler twoPhase = m -> {
                try (Connection c = ds.getConnection()) {
                    effect(c, m.key());
                }
                return null;
            };
            int batch = mode == Mode.BATCH ? 10 : 1;
            if (broker == Broker.KAFKA) {
                KafkaInboxConsumer.Builder b = mode == Mode.TWO_PHASE ? KafkaInboxConsumer.builder(store, twoPhase)
                        : KafkaInboxConsumer.builder(inbox, ds, handler);
                return b.bootstrapServers(KAFKA.bootstrapServers()).topics(destination)
                        .pollTimeout(Duration.ofMillis(100)).backoff(Duration.ofMillis(50), Duration.ofMillis(200))
                        .batchSize(batch).parkKeys(true).parkedPollInterval(Duration.ofMillis(200)).listener(listener)
                        .build();
            }
            RabbitInboxConsumer.Builder b = mode == Mode.TWO_PHASE ? RabbitInboxConsumer.builder(store, twoPhase)
                    : RabbitInboxConsumer.builder(inbox, ds, handler);
            return b.connectionFactory(RABBIT.connectionFactory()).queue(destination).prefetch(20)
                    .deadLetterExchange(destination + "-dlx").backoff(Duration.ofMillis(50), Duration.ofMillis(200))
                    .batchSize(batch).parkKeys(true).parkedPollInterval(Duration.ofMillis(200)).listener(listener)
                    .build();
        }

        private void effect(Connection c, String key) throws SQLException {
            if (poison.contains(key)) {
                throw new IllegalStateException("poison " + key);
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "insert into parked_effects (consumer, message_key) values (?, ?)")) {
                ps.setString(1, consumer);
                ps.setString(2, key);
                ps.executeUpdate();
            }
        }

        /** The effects of this test's consumer, in the order they committed. */
        List<String> effects() throws SQLException {
            List<String> keys = new ArrayList<>();
            try (Connection c = db.dataSource().getConnection();
                    PreparedStatement ps = c.prepareStatement(
                            "select message_key from parked_effects where consumer = ? order by id")) {
                ps.setString(1, consumer);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        keys.add(rs.getString(1));
                    }
                }
            }
            return keys;
        }
    }

    private static void execute(DataSource ds, String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }
}
