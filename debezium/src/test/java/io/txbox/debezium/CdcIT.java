package io.txbox.debezium;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Relay;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestCdc;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestKafka;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntFunction;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Change data capture with Debezium's embedded engine and {@link TxboxOutboxRouter}, on PostgreSQL
 * (pgoutput, a publication for inserts only) and on MariaDB (the binlog, through Debezium's MariaDB
 * connector; see {@link #engineDatabases}), publishing to a real Kafka broker, checked against
 * txbox's polling relay and a {@link KafkaInboxConsumer} downstream.
 */
class CdcIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    static final Duration WAIT = Duration.ofSeconds(90);
    static final Path OFFSETS = EmbeddedConnector.offsetsDir();
    static final List<String> SLOTS = new CopyOnWriteArrayList<>();
    static KafkaProducer<byte[], byte[]> producer;

    @BeforeAll
    static void setUp() {
        for (TestDatabase db : DBS.all()) {
            TestCdc.require(db);
            TxboxMigrations.migrate(db.dataSource(), TxboxTables.inSchema(db.schema()));
            try (Connection c = db.connection(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE " + db.qualified(db.schema(), "effects") + " (seq "
                        + (db.kind() == TestDatabase.Kind.POSTGRESQL ? "bigserial" : "bigint AUTO_INCREMENT")
                        + " PRIMARY KEY, step_key varchar(255) NOT NULL, routing_key varchar(255))");
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
        Map<String, Object> config = new HashMap<>(KAFKA.producerConfig());
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        producer = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @AfterAll
    static void tearDown() throws SQLException {
        if (producer != null) {
            producer.close();
        }
        EmbeddedConnector.deleteOffsets(OFFSETS);
        TestDatabase pg = DBS.postgres();
        for (String slot : SLOTS) {
            EmbeddedConnector.dropSlot(pg, slot);
        }
        try (Connection c = pg.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT slot_name FROM pg_replication_slots")) {
            List<String> left = new ArrayList<>();
            while (rs.next()) {
                left.add(rs.getString(1));
            }
            assertThat(left).as("replication slots this class made").doesNotContainAnyElementsOf(SLOTS);
        }
    }

    /**
     * Both databases: PostgreSQL through the engine in this JVM (Debezium 3.6), MariaDB through
     * Debezium's MariaDB connector in a JVM of its own ({@link ConnectorProcess}, on the Debezium
     * version of {@link MariaDbDebezium}).
     */
    static java.util.stream.Stream<TestDatabase> engineDatabases() {
        return DBS.all().stream();
    }

    static TxboxTables tables(TestDatabase db) {
        return TxboxTables.inSchema(db.schema());
    }

    static RunningConnector connector(TestDatabase db, String name) {
        if (db.kind() != TestDatabase.Kind.POSTGRESQL) {
            return ConnectorProcess.start(db, name, OFFSETS, KAFKA.bootstrapServers());
        }
        if (!SLOTS.contains(name)) {
            SLOTS.add(name);
        }
        return EmbeddedConnector.start(db, tables(db), name, OFFSETS, producer, Map.of());
    }

    static String topic(String hint) {
        String t = KAFKA.uniqueTopic(hint);
        KAFKA.createTopic(t, 4);
        return t;
    }

    static Relay relay(TestDatabase db, String... topics) {
        KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
        Relay.Builder b = Relay.builder().dataSource(db.dataSource()).tables(tables(db)).pollInterval(Duration.ofMillis(20));
        for (String t : topics) {
            b.route(t, kafka.topic(t));
        }
        return b.build();
    }

    static OutboxMessage message(String step, String destination, String routingKey, int seq) {
        return OutboxMessage.builder(StepKey.of(step, "step"), destination).routingKey(routingKey)
                .payload(routingKey + ":" + seq).build();
    }

    /** Sends each message in its own committed transaction, in order. */
    static void sendEach(TestDatabase db, Outbox outbox, int from, int to, IntFunction<OutboxMessage> message) {
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            for (int i = from; i < to; i++) {
                outbox.send(c, message.apply(i));
                c.commit();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every record of {@code topic} until {@code expected} distinct step keys arrived, then a little more. */
    static List<ConsumerRecord<byte[], byte[]>> read(String topic, int expected) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers());
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> parts = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            await().atMost(WAIT).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
                return out.stream().map(CdcIT::stepKey).distinct().count() >= expected;
            });
            for (int i = 0; i < 5; i++) {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    static String stepKey(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader("idempotency-key");
        return h == null ? null : new String(h.value(), UTF_8);
    }

    static List<String> headers(ConsumerRecord<byte[], byte[]> r) {
        List<String> out = new ArrayList<>();
        for (Header h : r.headers()) {
            out.add(h.key() + "=" + java.util.HexFormat.of().formatHex(h.value()));
        }
        return out;
    }

    /** A downstream consumer that records one effect row per first delivery. */
    static KafkaInboxConsumer effects(TestDatabase db, String topic) {
        String effects = db.qualified(db.schema(), "effects");
        Inbox inbox = Inbox.builder("cdc-" + topic).tables(tables(db)).build();
        KafkaInboxConsumer consumer = KafkaInboxConsumer.builder(inbox, db.dataSource(), (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + effects + " (step_key, routing_key) VALUES (?, ?)")) {
                String payload = new String(m.payload(), UTF_8);
                ps.setString(1, m.key());
                ps.setString(2, payload.substring(0, payload.indexOf(':')) + "|" + payload.substring(payload.indexOf(':') + 1));
                ps.executeUpdate();
            }
            return null;
        }).bootstrapServers(KAFKA.bootstrapServers()).topics(topic).pollTimeout(Duration.ofMillis(100)).build();
        consumer.start();
        return consumer;
    }

    /** Effects per step key, and each routing key's payload sequence numbers in effect order. */
    static Map<String, Integer> effectCounts(TestDatabase db, String stepPrefix, KeyOrder order) throws SQLException {
        Map<String, Integer> counts = new LinkedHashMap<>();
        try (Connection c = db.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT step_key, routing_key FROM " + db.qualified(db.schema(), "effects")
                        + " WHERE step_key LIKE '" + stepPrefix + "%' ORDER BY seq")) {
            while (rs.next()) {
                counts.merge(rs.getString(1), 1, Integer::sum);
                String[] keyAndSeq = rs.getString(2).split("\\|");
                if (order != null) {
                    order.add(keyAndSeq[0], Long.parseLong(keyAndSeq[1]));
                }
            }
        }
        return counts;
    }

    /**
     * One outbox, one destination polled and one captured: the captured row reaches Kafka with the
     * relay's topic layout, key, value and every header byte for byte; the relay, routing both,
     * never publishes the captured one; a rolled-back send is never published; a delayed send to a
     * captured destination is refused.
     */
    @ParameterizedTest
    @MethodSource("engineDatabases")
    void capturedRecord_isTheRelaysRecord_byteForByte(TestDatabase db) throws Exception {
        String polled = topic("polled");
        String captured = topic("captured");
        Outbox outbox = Outbox.builder().tables(tables(db)).changeDataCapture(Set.of(captured)).build();
        String name = EmbeddedConnector.newName("exact");
        try (RunningConnector connector = connector(db, name); Relay relay = relay(db, polled, captured)) {
            relay.start();
            try (Connection c = db.dataSource().getConnection()) {
                c.setAutoCommit(false);
                outbox.send(c, OutboxMessage.builder(StepKey.of("rolled-back", "step"), captured).payload("never").build());
                c.rollback();
                // captured first: its row is gone when the polled one takes the same step key
                for (String destination : List.of(captured, polled)) {
                    assertThat(outbox.send(c, OutboxMessage.builder(StepKey.of("o-1", "pay"), destination)
                            .routingKey("acct-ü").payload(new byte[] {0, (byte) 0xff, 'x'}).contentType("application/octet-stream")
                            .traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").tracestate("vendor=x,other=ü")
                            .header("tenant", "t1").header("x-quote", "\"a\\b\"\n").header("x-empty", "").build())).isTrue();
                }
                c.commit();
                assertThatThrownBy(() -> outbox.send(c, OutboxMessage.builder(StepKey.of("later", "step"), captured)
                        .payload("x").delay(Duration.ofSeconds(5)).build()))
                        .isInstanceOf(InvalidInputException.class).hasMessageContaining(captured).hasMessageContaining("delay");
                c.rollback();
            }
            ConsumerRecord<byte[], byte[]> viaRelay = read(polled, 1).get(0);
            List<ConsumerRecord<byte[], byte[]>> viaCdc = read(captured, 1);
            assertThat(viaCdc).as("one record: not the rolled-back one, not a second from the relay").hasSize(1);
            ConsumerRecord<byte[], byte[]> cdc = viaCdc.get(0);
            assertThat(cdc.key()).isEqualTo(viaRelay.key());
            assertThat(cdc.value()).isEqualTo(viaRelay.value());
            assertThat(cdc.partition()).isEqualTo(viaRelay.partition());
            assertThat(headers(cdc)).isEqualTo(headers(viaRelay)).hasSize(8);
            assertThat(rows(db)).as("captured rows never stay in the outbox").isZero();
        }
    }

    /**
     * Exactly-once effects in order per key through a connector that crashes after publishing a
     * batch and before committing its offsets, then restarts from its stored offsets: every send is
     * processed once, the republished records are absorbed by the inbox, and a transaction held
     * open while later ones commit is published when it commits.
     */
    @ParameterizedTest
    @MethodSource("engineDatabases")
    void connectorCrash_restartsFromStoredOffsets_exactlyOnceEffectsInKeyOrder(TestDatabase db) throws Exception {
        String topic = topic("crash");
        Outbox outbox = Outbox.builder().tables(tables(db)).changeDataCapture().build();
        String name = EmbeddedConnector.newName("crash");
        int n = 300;
        String prefix = "crash-" + db.kind().name();
        IntFunction<OutboxMessage> message = i -> message(prefix + "-" + i, topic, "k" + (i % 7), i);
        try (RunningConnector first = connector(db, name); KafkaInboxConsumer downstream = effects(db, topic);
                Connection held = db.dataSource().getConnection()) {
            held.setAutoCommit(false);
            outbox.send(held, message(prefix + "-held", topic, "held-key", 0));
            first.crashAt(n / 3);
            sendEach(db, outbox, 0, n / 2, message);
            await().atMost(WAIT).until(first::stopped);
            int publishedBeforeCrash = first.published();
            first.close();
            held.commit();
            try (RunningConnector second = connector(db, name)) {
                sendEach(db, outbox, n / 2, n, message);
                KeyOrder order = new KeyOrder();
                await().atMost(WAIT).until(() -> effectCounts(db, prefix, null).size() == n + 1);
                Map<String, Integer> counts = effectCounts(db, prefix, order);
                assertThat(counts.values()).as("effects per step key").containsOnly(1);
                assertThat(order.violations()).as("%s", order).isEmpty();
                List<ConsumerRecord<byte[], byte[]>> records = read(topic, n + 1);
                second.close();
                assertThat(publishedBeforeCrash + second.published())
                        .as("records published, the crashed batch's twice").isGreaterThan(n + 1);
                assertThat(records.size()).as("records on the topic").isGreaterThan(n + 1);
            }
        }
    }

    /**
     * A service moves from the polling relay to CDC and back while both run: every message is
     * delivered once (the relay never sees captured rows, the router drops polled ones) and
     * processed once.
     */
    @ParameterizedTest
    @MethodSource("engineDatabases")
    void switchPollToCdcAndBack_midStream_noEffectLostOrDoubled(TestDatabase db) throws Exception {
        String topic = topic("switch");
        Outbox polling = Outbox.builder().tables(tables(db)).build();
        Outbox capturing = Outbox.builder().tables(tables(db)).changeDataCapture(Set.of(topic)).build();
        String prefix = "switch-" + db.kind().name();
        IntFunction<OutboxMessage> message = i -> message(prefix + "-" + i, topic, "k" + (i % 5), i);
        int n = 300;
        try (KafkaInboxConsumer downstream = effects(db, topic); Relay relay = relay(db, topic);
                RunningConnector connector = connector(db, EmbeddedConnector.newName("switch"))) {
            relay.start();
            sendEach(db, polling, 0, n / 3, message);
            sendEach(db, capturing, n / 3, 2 * n / 3, message);
            sendEach(db, polling, 2 * n / 3, n, message);
            await().atMost(WAIT).until(() -> effectCounts(db, prefix, null).size() == n);
            assertThat(effectCounts(db, prefix, null).values()).as("effects per step key").containsOnly(1);
            List<ConsumerRecord<byte[], byte[]>> records = read(topic, n);
            assertThat(records).as("each message delivered once").hasSize(n);
            await().atMost(WAIT).until(() -> rows(db) == 0);
        }
    }

    /**
     * The hazard {@code docs/DEBEZIUM.md} names: a key's rows still waiting for the relay when the
     * outbox switches to CDC are overtaken by the key's captured sends. Each message is still
     * published once: the relay drains the waiting rows and never publishes a captured one.
     */
    @ParameterizedTest
    @MethodSource("engineDatabases")
    void switchToCdc_withPolledRowsWaiting_capturedSendsOvertakeThem(TestDatabase db) throws Exception {
        String topic = topic("overtake");
        String prefix = "overtake-" + db.kind().name();
        IntFunction<OutboxMessage> message = i -> message(prefix + "-" + i, topic, "k", i);
        try (RunningConnector connector = connector(db, EmbeddedConnector.newName("overtake"))) {
            sendEach(db, Outbox.builder().tables(tables(db)).build(), 0, 10, message);
            sendEach(db, Outbox.builder().tables(tables(db)).changeDataCapture(Set.of(topic)).build(), 10, 20, message);
            assertThat(read(topic, 10)).as("the captured sends, published while the polled rows wait").hasSize(10);
            try (Relay relay = relay(db, topic)) {
                relay.start();
                List<ConsumerRecord<byte[], byte[]>> records = read(topic, 20);
                assertThat(records).as("each message published once").hasSize(20);
                KeyOrder order = payloadOrder(records);
                assertThat(order.violationCount()).as("polled rows published after the key's later captured ones: %s", order)
                        .isEqualTo(10);
                await().atMost(WAIT).until(() -> rows(db) == 0);
            }
        }
    }

    /**
     * The safe switch of {@code docs/DEBEZIUM.md}: with a backlog waiting for the relay, the sender
     * pauses until the destination is drained (no outbox rows, no key holds), then sends in CDC
     * mode: every key's order holds across the switch, and each message is published once.
     */
    @ParameterizedTest
    @MethodSource("engineDatabases")
    void switchToCdc_afterTheRelayDrained_keyOrderHolds(TestDatabase db) throws Exception {
        String topic = topic("drained");
        String prefix = "drained-" + db.kind().name();
        IntFunction<OutboxMessage> message = i -> message(prefix + "-" + i, topic, "k" + (i % 5), i);
        int n = 200;
        sendEach(db, Outbox.builder().tables(tables(db)).build(), 0, n / 2, message);
        try (RunningConnector connector = connector(db, EmbeddedConnector.newName("drained")); Relay relay = relay(db, topic)) {
            relay.start();
            await().atMost(WAIT).until(() -> waiting(db, topic) == 0);
            sendEach(db, Outbox.builder().tables(tables(db)).changeDataCapture(Set.of(topic)).build(), n / 2, n, message);
            List<ConsumerRecord<byte[], byte[]>> records = read(topic, n);
            assertThat(records).as("each message published once").hasSize(n);
            KeyOrder order = payloadOrder(records);
            assertThat(order.violations()).as("%s", order).isEmpty();
        }
    }

    /** Per-key order of {@code key:sequence} payloads, in arrival order. */
    static KeyOrder payloadOrder(List<ConsumerRecord<byte[], byte[]>> records) {
        return KeyOrder.ofPayloads(records.stream().map(r -> new String(r.value(), UTF_8)).toList());
    }

    /** The drain check of docs/DEBEZIUM.md: rows waiting for the relay, and keys it holds back, of one destination. */
    static long waiting(TestDatabase db, String destination) throws SQLException {
        String sql = "SELECT (SELECT count(*) FROM " + db.qualified(db.schema(), tables(db).outboxTable())
                + " WHERE destination = ?) + (SELECT count(*) FROM " + db.qualified(db.schema(), tables(db).outboxKeyHoldTable())
                + " WHERE destination = ?)";
        try (Connection c = db.connection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, destination);
            ps.setString(2, destination);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    static long rows(TestDatabase db) throws SQLException {
        try (Connection c = db.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM " + db.qualified(db.schema(), tables(db).outboxTable()))) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
