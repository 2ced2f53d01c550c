package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.testkit.DeleteGate;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestRabbit;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay as a child process, SIGKILLed at random moments while it publishes, restarted each
 * time. Afterwards the outbox is empty, every step key reached the broker at least once, and an
 * inbox consumer turns the duplicates into exactly one business effect per key. Per routing key,
 * the records reach the broker in the order the {@link Feeder}'s sequential transactions wrote
 * them (a republished record is a repeat, not a violation), and the Kafka consumer commits them in
 * that order. The outbox and the relay run on PostgreSQL and on MariaDB; the consumer's inbox and
 * effects are on PostgreSQL.
 */
class RelaySigkillIT {
    private static final Logger log = LoggerFactory.getLogger(RelaySigkillIT.class);

    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration FAST_INITIAL = Duration.ofMillis(100);
    static final Duration FAST_MAX = Duration.ofMillis(400);
    static final int PREFILLED = 5000;
    static final int PER_ROUND = 300;
    static final int KILLS = 4;

    static TxboxTables tables;
    static Effects effects;

    /** The database of the outbox and the relay in this invocation, and its outbox. */
    TestDatabase db;
    Outbox outbox;

    @BeforeAll
    static void setUp() {
        tables = TxboxTables.inSchema(DBS.postgres().schema());
        TxboxMigrations.migrate(DBS.postgres().dataSource(), tables);
        TxboxMigrations.migrate(DBS.mariadb().dataSource(), TxboxTables.inSchema(DBS.mariadb().schema()));
        effects = new Effects(DBS.postgres().dataSource());
    }

    private void on(TestDatabase database) {
        db = database;
        outbox = Outbox.builder().tables(TxboxTables.inSchema(database.schema())).build();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relayChild_sigkilledRepeatedlyPublishingToKafka_everyStepDeliveredAndAppliedOnce(TestDatabase database)
            throws Exception {
        on(database);
        String topic = KAFKA.uniqueTopic("sigkill");
        KAFKA.createTopic(topic, 4);
        Set<String> emitted = new LinkedHashSet<>(emit("kafka", 0, PREFILLED));
        emitted.addAll(runWithKills("kafka", KAFKA.bootstrapServers(), topic));
        assertThat(outboxRows()).isZero();
        assertThat(deadRows()).isZero();

        List<ConsumerRecord<byte[], byte[]>> records = Topics.delivered(KAFKA.bootstrapServers(), topic, emitted,
                Duration.ofSeconds(60));
        List<String> delivered = Topics.header(records, "idempotency-key");
        KeyOrder published = Topics.keyOrder(records);
        assertThat(published.violations()).as("published: %s", published).isEmpty();

        String name = "sigkill-kafka-" + db.kind();
        String group = topic + "-inbox";
        ProcessingLog processing = new ProcessingLog(DBS.postgres());
        try (InboxConsumer consumer = KafkaInboxConsumer.builder(Inbox.builder(name).tables(tables).build(),
                        DBS.postgres().dataSource(), processing.recorder(name, Effects.recorder(name)))
                .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).groupId(group).backoff(FAST_INITIAL, FAST_MAX)
                .pollTimeout(Duration.ofMillis(100)).consumerProperty("max.poll.records", 500).build()) {
            consumer.start();
            Topics.awaitCaughtUp(KAFKA.bootstrapServers(), group, topic, Duration.ofSeconds(120));
        }
        long republished = Oracle.check("relay SIGKILLed x" + KILLS + " -> Kafka", emitted, delivered,
                effects.countsByKey(name));
        KeyOrder consumed = processing.keyOrder(name);
        assertThat(consumed.distinct()).isEqualTo(emitted.size());
        assertThat(consumed.duplicates()).as("consumed: %s", consumed).isZero();
        assertThat(consumed.violations()).as("consumed: %s", consumed).isEmpty();
        assertThat(republished).as("rows published again after a kill landed between publish and delete").isPositive();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relayChild_sigkilledRepeatedlyPublishingToRabbit_everyStepDeliveredAndAppliedOnce(TestDatabase database)
            throws Exception {
        on(database);
        String exchange = RABBIT.name("sigkill-x-" + db.kind());
        String inboxQueue = RABBIT.name("sigkill-inbox-" + db.kind());
        RABBIT.track(inboxQueue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX); // the consumer declares it
        String auditQueue = RABBIT.name("sigkill-audit-" + db.kind());
        Connection rabbit = RABBIT.newConnection();
        Queues.declare(rabbit, exchange, inboxQueue, auditQueue);
        Set<String> emitted = new LinkedHashSet<>(emit("rabbit", 0, PREFILLED / 2));
        // "amqp://host/" would name the empty vhost; the node's default vhost is "/"
        emitted.addAll(runWithKills("rabbit", RABBIT.uri().replaceAll("/$", ""), exchange));
        assertThat(outboxRows()).isZero();
        assertThat(deadRows()).isZero();

        KeyOrder published = new KeyOrder();
        List<String> delivered = Queues.drainStepKeys(rabbit, auditQueue, emitted, Duration.ofSeconds(60), published);
        assertThat(published.violations()).as("published: %s", published).isEmpty();

        String name = "sigkill-rabbit-" + db.kind();
        try (InboxConsumer consumer = RabbitInboxConsumer.builder(Inbox.builder(name).tables(tables).build(),
                        DBS.postgres().dataSource(), Effects.recorder(name))
                .connectionFactory(RABBIT.connectionFactory()).queue(inboxQueue).deadLetterExchange(RABBIT.track(exchange + "-dlx"))
                .prefetch(1).backoff(FAST_INITIAL, FAST_MAX).build()) {
            consumer.start();
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() ->
                    effects.distinct(name) == emitted.size() && Queues.ready(rabbit, inboxQueue) == 0);
        }
        assertThat(Queues.ready(rabbit, inboxQueue)).as("messages left unacked in the inbox queue").isZero();
        long republished = Oracle.check("relay SIGKILLed x" + KILLS + " -> RabbitMQ", emitted, delivered,
                effects.countsByKey(name));
        assertThat(republished).as("rows published again after a kill landed between publish and delete").isPositive();
    }

    /**
     * Starts a relay child {@link #KILLS} times, emitting more rows before each start, and kills
     * it with SIGKILL: at a random moment after it has begun to publish, or, every other round,
     * while its first DELETE waits at a {@link DeleteGate}. The last child drains the outbox and
     * is stopped. Returns the step keys emitted here.
     */
    private List<String> runWithKills(String broker, String address, String target) throws Exception {
        List<String> emitted = new ArrayList<>();
        int next = 1_000_000;
        for (int round = 0; round <= KILLS; round++) {
            emitted.addAll(emit(broker, next, PER_ROUND));
            next += PER_ROUND;
            long before = outboxRows();
            String id = "child-" + broker + "-" + round + "-" + Long.toHexString(System.nanoTime() & 0xffffff);
            // every other round the kill lands where it costs most: the gate holds the child's
            // first DELETE, so its batch is published and still in the outbox when it dies
            boolean gated = round < KILLS && round % 2 == 1;
            boolean postgres = db.kind() == TestDatabase.Kind.POSTGRESQL;
            String outboxTable = db.qualified(db.schema(), tables.outboxTable());
            DeleteGate gate = gated && postgres ? DeleteGate.shut(db.dataSource(), db.schema(), outboxTable) : null;
            MariaDbDeleteGate mariaGate = gated && !postgres ? MariaDbDeleteGate.shut(db.dataSource(), db.schema(), outboxTable)
                    : null;
            try (Child child = Child.start(RelayChild.class, id, RelayChild.READY,
                    broker, db.jdbcUrl(), db.user(), db.schema(), address, target, id)) {
                if (gated) {
                    if (gate != null) {
                        gate.awaitWaiting("relay-child-" + id, Duration.ofSeconds(60));
                    } else {
                        mariaGate.awaitWaiting(Duration.ofSeconds(60));
                    }
                    child.kill();
                    log.info("round {}: SIGKILLed {} between publish and delete, {} of {} rows left", round, id,
                            outboxRows(), before);
                } else if (round < KILLS) {
                    // publishing has begun once rows leave the outbox (after the dead child's lanes expired)
                    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(10))
                            .until(() -> outboxRows() < before);
                    // a random point of progress: kill once a random share of the rows is gone
                    long killAt = ThreadLocalRandom.current().nextLong(0, before);
                    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5))
                            .until(() -> outboxRows() <= killAt);
                    child.kill();
                    log.info("round {}: SIGKILLed {} with {} of {} rows left", round, id, outboxRows(), before);
                } else {
                    await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
                            .until(() -> outboxRows() == 0);
                }
            } finally {
                if (gate != null) {
                    gate.close();
                }
                if (mariaGate != null) {
                    mariaGate.close();
                }
            }
        }
        return emitted;
    }

    /** Emits rows {@code from..from+count-1} through the {@link Feeder}'s concurrent writers and returns their step keys. */
    private List<String> emit(String prefix, int from, int count) throws InterruptedException {
        try (Feeder feeder = new Feeder(db.dataSource(), outbox, prefix, RelayChild.DESTINATION, from, count, 250,
                Duration.ZERO)) {
            return new ArrayList<>(feeder.finish(Duration.ofSeconds(120)));
        }
    }

    private long outboxRows() {
        return count(tables.outboxTable());
    }

    private long deadRows() {
        return count(tables.outboxDeadTable());
    }

    private long count(String table) {
        try (java.sql.Connection c = db.dataSource().getConnection(); java.sql.Statement s = c.createStatement();
                java.sql.ResultSet rs = s.executeQuery("SELECT count(*) FROM " + db.qualified(db.schema(), table))) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
