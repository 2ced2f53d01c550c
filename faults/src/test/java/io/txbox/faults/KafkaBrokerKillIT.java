package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.PrivateKafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * The Kafka broker SIGKILLed while the relay publishes and an inbox consumer consumes, then
 * restarted on the same ports with the same data. The kill shows: publishes fail and the rows
 * written meanwhile record the error and wait. Per routing key, the records on the topic and the
 * consumer's committed effects follow the order in which the feeder's sequential transactions
 * wrote them. Outbox, relay and inbox on PostgreSQL and on MariaDB, each with a broker of its own.
 */
class KafkaBrokerKillIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_brokerSigkilledAndRestartedWhilePublishingAndConsuming_everyStepDeliveredAndAppliedOnce(TestDatabase db)
            throws Exception {
        TxboxTables tables = TxboxTables.inSchema(db.schema());
        TxboxMigrations.migrate(db.dataSource(), tables);
        Outbox outbox = Outbox.builder().tables(tables).build();
        Effects effects = new Effects(db.dataSource());
        ProcessingLog processing = new ProcessingLog(db);
        String outboxTable = db.qualified(db.schema(), tables.outboxTable());
        String name = "kafka-broker-kill";
        int total = 2000;
        try (PrivateKafkaBroker broker = KafkaBroker.startPrivate()) {
            String topic = broker.uniqueTopic("kill");
            broker.createTopic(topic, 4);
            String group = topic + "-inbox";
            KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(broker.bootstrapServers())
                    .property("delivery.timeout.ms", "3000").property("request.timeout.ms", "1000")
                    .property("max.block.ms", "1500").build();
            try (Relay relay = Relay.builder().dataSource(db.dataSource()).tables(tables).route("steps", kafka.topic(topic))
                            .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(4))
                            .laneLease(Duration.ofSeconds(10)).backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
                            .maxAttempts(1000).build();
                    InboxConsumer consumer = KafkaInboxConsumer.builder(Inbox.builder(name).tables(tables).build(),
                                    db.dataSource(), processing.recorder(name, Effects.recorder(name)))
                            .bootstrapServers(broker.bootstrapServers()).topics(topic).groupId(group)
                            .backoff(Duration.ofMillis(100), Duration.ofMillis(500))
                            .pollTimeout(Duration.ofMillis(100)).build();
                    Feeder feeder = new Feeder(db.dataSource(), outbox, "kk", "steps", total, 20, Duration.ofMillis(120))) {
                relay.start();
                consumer.start();
                // the consumer at work, and the kill strikes while rows still arrive, or the relay has nothing to fail
                await().atMost(Duration.ofSeconds(60)).until(() -> effects.distinct(name) >= 100);
                assertThat(feeder.running()).as("the feeder still writes when the broker is killed").isTrue();

                broker.kill();
                int atKill = effects.distinct(name);
                feeder.awaitMore(200, Duration.ofSeconds(30)); // rows keep arriving; publishes and commits fail
                // the kill's footprint in the outbox: rows wait with the failed attempt's error
                await().atMost(Duration.ofSeconds(30)).until(() -> effects.queryLong("SELECT count(*) FROM " + outboxTable
                        + " WHERE last_error IS NOT NULL") > 0);
                long failedDuringOutage = relay.status().failed();
                assertThat(failedDuringOutage).as("publishes that failed while the broker was dead").isPositive();
                broker.restart();

                Set<String> emitted = feeder.finish(Duration.ofSeconds(60));
                assertThat(emitted).hasSize(total);
                await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() ->
                        effects.queryLong("SELECT count(*) FROM " + outboxTable) == 0);
                Topics.awaitCaughtUp(broker.bootstrapServers(), group, topic, Duration.ofSeconds(120));
                assertThat(consumer.isRunning()).isTrue();
                assertThat(atKill).isLessThan(total);

                List<ConsumerRecord<byte[], byte[]>> records = Topics.delivered(broker.bootstrapServers(), topic, emitted,
                        Duration.ofSeconds(60));
                long redelivered = Oracle.check("Kafka broker SIGKILLed and restarted", emitted,
                        Topics.header(records, "idempotency-key"), effects.countsByKey(name));
                // a record on the topic twice is a publish retried after the broker took it but
                // its answer was lost: never more keys than failed publishes
                assertThat(redelivered).as("step keys on the topic more than once").isBetween(0L, relay.status().failed());
                KeyOrder published = Topics.keyOrder(records);
                assertThat(published.violations()).as("published: %s", published).isEmpty();
                KeyOrder consumed = processing.keyOrder(name);
                assertThat(consumed.distinct()).isEqualTo(total);
                assertThat(consumed.duplicates()).as("consumed: %s", consumed).isZero();
                assertThat(consumed.violations()).as("consumed: %s", consumed).isEmpty();
                assertThat(effects.queryLong("SELECT count(*) FROM " + db.qualified(db.schema(), tables.outboxDeadTable())))
                        .isZero();
            }
        }
    }
}
