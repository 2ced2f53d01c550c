package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.relay.Route;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * RabbitMQ outages while the relay publishes and an inbox consumer consumes: the relay's and the
 * consumer's connections closed by the broker, and the broker application stopped and started
 * ({@code rabbitmqctl stop_app / start_app}). Each fault shows: the consumer reports the lost
 * connection and the relay fails publishes and records the error. Nothing is lost, nothing is
 * applied twice, and per routing key the messages reach the broker in the order the feeder's
 * sequential transactions wrote them. Outbox, relay and inbox on PostgreSQL and on MariaDB.
 */
class RabbitOutageIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    private static TxboxTables tables(TestDatabase db) {
        return Effects.migrated(db);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_connectionsClosedByBrokerWhilePublishingAndConsuming_everyStepDeliveredAndAppliedOnce(TestDatabase db)
            throws Exception {
        // rabbitmqctl takes seconds to close a connection: the feeder writes slowly enough to outlast it
        run(db, "closed", Duration.ofMillis(300), (publisherConnection, consumerConnection, feeder) -> {
            assertThat(RABBIT.closeConnections(publisherConnection)).isPositive();
            // the relay fails publishes only while rows arrive during its connection's recovery
            assertThat(feeder.running()).as("the feeder still writes once the relay's connection is closed").isTrue();
            assertThat(RABBIT.closeConnections(consumerConnection)).isPositive();
        });
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_appStoppedAndStartedWhilePublishingAndConsuming_everyStepDeliveredAndAppliedOnce(TestDatabase db)
            throws Exception {
        run(db, "stopapp", Duration.ofMillis(100), (publisherConnection, consumerConnection, feeder) -> {
            try {
                RABBIT.stopApp();
                feeder.awaitMore(200, Duration.ofSeconds(30)); // rows keep arriving; publishes fail
            } finally {
                RABBIT.startApp(); // shared node: always start it again
            }
        });
    }

    interface Fault {
        void inject(String publisherConnection, String consumerConnection, Feeder feeder) throws Exception;
    }

    /**
     * Runs relay and consumer on {@code db} through {@code fault}. Footprint: the consumer saw its connection
     * fail (and recovered), and the relay counted failed publishes and recorded the error. The
     * feeder pauses {@code feederPause} between transactions.
     */
    private void run(TestDatabase db, String hint, Duration feederPause, Fault fault) throws Exception {
        TxboxTables tables = tables(db);
        Outbox outbox = Outbox.builder().tables(tables).build();
        Effects effects = new Effects(db.dataSource());
        // RabbitMQ names are per class: one set per database
        String names = hint + "-" + db.kind().name().toLowerCase(Locale.ROOT);
        String exchange = RABBIT.name(names + "-x");
        String inboxQueue = RABBIT.name(names + "-inbox");
        RABBIT.track(inboxQueue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX); // the consumer declares it
        String auditQueue = RABBIT.name(names + "-audit");
        Connection rabbit = RABBIT.newConnection();
        Queues.declare(rabbit, exchange, inboxQueue, auditQueue);
        String unique = hint + "-" + UUID.randomUUID().toString().substring(0, 8);
        String name = "rabbit-outage-" + unique;
        String publisherConnection = "faults-relay-" + unique;
        int total = 1200;
        // the relay's connection stays down long enough that the feeder's next rows arrive while it
        // recovers, so the relay fails publishes whichever database wakes it (LISTEN or polling)
        ConnectionFactory publisherFactory = RABBIT.connectionFactory();
        publisherFactory.setNetworkRecoveryInterval(3000);
        RabbitPublisher publisher = RabbitPublisher.builder().connectionFactory(publisherFactory)
                .connectionName(publisherConnection).build();
        PublishTrace trace = new PublishTrace(publisher);
        Set<String> emitted;
        AtomicInteger consumerErrors = new AtomicInteger();
        ConsumerListener errors = new ConsumerListener() {
            @Override
            public void onError(String consumer, Throwable error) {
                consumerErrors.incrementAndGet();
            }
        };
        try (Relay relay = Relay.builder().dataSource(db.dataSource()).tables(tables)
                        .route(hint, Route.of(trace, exchange)).pollInterval(Duration.ofMillis(20))
                        .publishTimeout(Duration.ofSeconds(2)).laneLease(Duration.ofSeconds(10))
                        .backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).maxAttempts(1000).build();
                InboxConsumer consumer = RabbitInboxConsumer.builder(Inbox.builder(name).tables(tables).build(),
                                db.dataSource(), Effects.recorder(name))
                        .connectionFactory(RABBIT.connectionFactory()).queue(inboxQueue)
                        .deadLetterExchange(RABBIT.track(exchange + "-dlx")).prefetch(10).listener(errors)
                        .backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build();
                Feeder feeder = new Feeder(db.dataSource(), outbox, unique, hint, total, 20, feederPause)) {
            relay.start();
            consumer.start();
            // the relay at work, and the fault strikes while rows still arrive, or the relay has
            // nothing to fail (the consumer, slower to start, works through the backlog later)
            await().atMost(Duration.ofSeconds(60)).until(() -> relay.status().published() >= 100);
            assertThat(feeder.emittedSoFar()).as("rows emitted when the fault strikes").isLessThan(total / 2);

            long failedBefore = relay.status().failed();
            fault.inject(publisherConnection, "txbox-" + name, feeder);
            await().atMost(Duration.ofSeconds(30)).until(() -> consumerErrors.get() > 0);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(relay.status().failed()).as("publishes that failed during the outage").isGreaterThan(failedBefore);
                assertThat(relay.status().lastError()).as("the relay's last error").isNotBlank();
            });

            emitted = feeder.finish(Duration.ofSeconds(60));
            assertThat(emitted).hasSize(total);
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() ->
                    effects.queryLong("SELECT count(*) FROM " + db.qualified(db.schema(), tables.outboxTable())) == 0);
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() ->
                    effects.distinct(name) == total && Queues.ready(rabbit, inboxQueue) == 0);
            assertThat(consumer.isRunning()).isTrue();
        }
        assertThat(Queues.ready(rabbit, inboxQueue)).as("messages left in the inbox queue").isZero();
        KeyOrder published = new KeyOrder();
        List<String> delivered = Queues.drainStepKeys(rabbit, auditQueue, emitted, Duration.ofSeconds(60), published);
        Oracle.check("RabbitMQ " + hint + " on " + db.kind(), emitted, delivered, effects.countsByKey(name));
        assertThat(published.violations()).as("published: %s; what the relay sent, for the first key out of order:%n%s",
                published, published.violations().isEmpty() ? "" : trace.of(published.violations().get(0).split("[ :]")[1]))
                .isEmpty();
        assertThat(effects.queryLong("SELECT count(*) FROM " + db.qualified(db.schema(), tables.outboxDeadTable())))
                .isZero();
    }
}
