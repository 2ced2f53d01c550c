package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * A destination whose RabbitMQ exchange does not exist, next to a healthy one: the missing
 * exchange costs the healthy destination no message, no retry and no order, its own rows wait
 * without counting attempts, health names the exchange, and the rows go out once it exists.
 * (The standalone relay's readiness probe on a missing exchange: {@code StandaloneReadinessIT}.)
 */
class RabbitMissingExchangeIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final int KEYS = 40;
    static final int ROWS = 1200;

    Db db;
    static Connection admin;
    final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    final Logger relayLogs = (Logger) LoggerFactory.getLogger("io.txbox.relay");
    static Channel ch;

    @BeforeAll
    static void setUp() throws Exception {
        admin = RABBIT.newConnection();
        ch = admin.createChannel();
    }

    @AfterAll
    static void tearDown() throws Exception {
        admin.close();
    }

    /** Row i: key k-(i % KEYS), every third row to the missing exchange, payload "key:seq". */
    static OutboxMessage row(int i, String healthy, String missing) {
        String key = "k-" + (i % KEYS);
        String destination = i % 3 == 0 ? missing : healthy;
        return OutboxMessage.builder(StepKey.of("m-" + i, "ship"), destination).routingKey(key)
                .payload(key + ":" + i).build();
    }

    static String declareBoundExchange(String hint) throws Exception {
        String exchange = RABBIT.name(hint);
        String queue = RABBIT.name(hint + "-q");
        ch.exchangeDeclare(exchange, "topic", false);
        ch.queueDeclare(queue, false, false, false, null);
        ch.queueBind(queue, exchange, "#");
        return queue;
    }

    static List<String> drain(String queue, int expected) {
        List<String> got = new ArrayList<>();
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            GetResponse r;
            while ((r = ch.basicGet(queue, true)) != null) {
                got.add(Db.utf8(r.getBody()));
            }
            return got.size() >= expected;
        });
        return got;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void missingExchange_oneWorker_healthyRowsFlowInOrder_missingRowsWaitUncountedThenPublishInOrder(TestDatabase database)
            throws Exception {
        db = new Db(database);
        logged.list.clear();
        logged.start();
        relayLogs.addAppender(logged);
        String kind = database.kind().name().toLowerCase();
        String healthyQueue = declareBoundExchange("healthy-" + kind);
        String healthy = RABBIT.name("healthy-" + kind);
        String missing = RABBIT.name("missing-" + kind);
        // four writers on their own connections, each key from one writer in sequential transactions
        db.sendConcurrently(ROWS, 4, 30, i -> i % KEYS % 4, Duration.ZERO, 0, i -> row(i, "healthy", "missing"));
        int missingRows = (ROWS + 2) / 3;
        // the relay's ticker runs with real time plus this skew, so the test moves it past a pause at will
        AtomicLong skew = new AtomicLong();

        try (RabbitPublisher rabbit = RabbitPublisher.builder().uri(RABBIT.uri()).build();
                Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).workers(1).batchSize(100)
                        .route("healthy", rabbit.exchange(healthy)).route("missing", rabbit.exchange(missing))
                        .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(3))
                        .laneLease(Duration.ofSeconds(6)).maxAttempts(3)
                        .backoff(Duration.ofMillis(50), Duration.ofMillis(400))
                        .ticker(() -> System.nanoTime() + skew.get()).random(() -> 0L).build()) {
            relay.start();

            List<String> got = drain(healthyQueue, ROWS - missingRows);
            assertThat(got).hasSize(ROWS - missingRows);
            KeyOrder healthyOrder = KeyOrder.ofPayloads(got);
            assertThat(healthyOrder.violations()).as("healthy rows: %s", healthyOrder).isEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == missingRows);
            assertThat(db.deadRows()).as("rows dead-lettered").isZero();
            String outbox = db.table(db.tables.outboxTable());
            assertThat(db.queryLong("SELECT count(*) FROM " + outbox + " WHERE destination = 'missing'")).isEqualTo(missingRows);
            assertThat(db.queryLong("SELECT coalesce(max(attempts), 0) FROM " + outbox)).as("attempts counted").isZero();
            assertThat(db.queryString("SELECT max(last_error) FROM " + outbox)).contains(missing).contains("NOT_FOUND");

            RelayStatus.Health health = relay.health(Duration.ofSeconds(2));
            assertThat(health.up()).isFalse();
            assertThat(health.brokers().get("healthy")).isEqualTo("UP");
            assertThat(health.brokers().get("missing")).startsWith("DOWN").contains("exchange \"" + missing + "\" does not exist");
            assertThat(relay.status().waitingDestinations()).containsOnlyKeys("missing");
            assertThat(relay.status().deadLettered()).isZero();

            // the rows waiting so far count nothing, so more time changes nothing: move the relay's
            // ticker past the longest pause, three times, and let it try the destination again each time
            for (int i = 0; i < 3; i++) {
                long tried = relay.status().failed();
                skew.addAndGet(Duration.ofSeconds(TargetNotFoundException.MAX_WAIT_SECONDS + 1).toNanos());
                relay.wakeUp();
                await().atMost(Duration.ofSeconds(10)).until(() -> relay.status().failed() > tried);
            }
            assertThat(db.deadRows()).isZero();
            assertThat(db.queryLong("SELECT coalesce(max(attempts), 0) FROM " + outbox)).isZero();

            String missingQueue = declareBoundExchange("missing-" + kind);
            List<String> late = drain(missingQueue, missingRows);
            assertThat(late).hasSize(missingRows);
            KeyOrder lateOrder = KeyOrder.ofPayloads(late);
            assertThat(lateOrder.violations()).as("rows that waited: %s", lateOrder).isEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            assertThat(db.deadRows()).isZero();
            await().atMost(Duration.ofSeconds(10)).until(() -> relay.health(Duration.ofSeconds(2)).up());
            assertThat(relay.status().waitingDestinations()).isEmpty();
        } finally {
            relayLogs.detachAppender(logged);
        }
        // the close summary agrees with the docs: the waiting rows cost no attempt
        String closed = logged.list.stream().map(ILoggingEvent::getFormattedMessage)
                .filter(m -> m.contains(" - closed: ")).findFirst().orElseThrow();
        assertThat(closed).contains(" 0 failed attempts").containsPattern(" [1-9][0-9]* deferred while their target was missing")
                .contains("0 dead-lettered");
    }
}
