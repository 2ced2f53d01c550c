package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.PrivateKafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

class KafkaBrokerDownIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafka_brokerSigkilledForAWhile_rowsPublishedAfterRecoveryWithAttemptsRecorded(TestDatabase database) {
        Db db = new Db(database);
        String outbox = db.table(db.tables.outboxTable());
        try (PrivateKafkaBroker broker = KafkaBroker.startPrivate()) {
            String topic = broker.uniqueTopic("down");
            broker.createTopic(topic, 2);
            KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(broker.bootstrapServers())
                    .property("delivery.timeout.ms", "2500").property("request.timeout.ms", "1000")
                    .property("max.block.ms", "1500").build();
            try (Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).route("down", kafka.topic(topic))
                    .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(4))
                    .laneLease(Duration.ofSeconds(10)).backoff(Duration.ofMillis(200), Duration.ofSeconds(1))
                    .maxAttempts(1000).build()) {
                relay.start();
                db.sendMany(10, i -> msg(i));
                await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0);

                broker.kill(); // SIGKILL: no controlled shutdown, clients find out from dead sockets
                // the first row of each key fails, is counted and backs off (its key is held); only then
                // do the rest arrive, so none can share a batch with it: rows of a key in flight in one
                // batch each count their own failure
                db.sendMany(5, i -> msg(10 + i));
                await().atMost(Duration.ofSeconds(30)).until(() ->
                        db.queryLong("SELECT count(DISTINCT routing_key) FROM " + outbox + " WHERE attempts >= 1") == 5);
                // five writers, one per key, each in sequential transactions of five rows: they wait
                // uncounted behind their key's hold; none is lost or dead-lettered
                db.sendConcurrently(45, 5, 5, i -> i % 5, Duration.ZERO, 0, i -> msg(15 + i));
                await().atMost(Duration.ofSeconds(30)).until(() ->
                        db.queryLong("SELECT count(DISTINCT routing_key) FROM " + outbox + " WHERE attempts >= 2") == 5);
                assertThat(db.queryLong("SELECT count(*) FROM " + outbox)).isEqualTo(50);
                assertThat(db.queryLong("SELECT count(*) FROM " + outbox + " WHERE attempts = 0")).as("rows waiting behind their key's hold").isEqualTo(45);
                assertThat(db.queryString("SELECT last_error FROM " + outbox + " ORDER BY id LIMIT 1")).contains("Kafka topic " + topic);
                long attemptsBefore = db.queryLong("SELECT sum(attempts) FROM " + outbox);
                await().pollDelay(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> true);
                long attemptsAfter = db.queryLong("SELECT sum(attempts) FROM " + outbox);
                // not spinning: each attempt waits for the producer's 2.5 s delivery timeout, then backs off
                assertThat(attemptsAfter - attemptsBefore).isLessThanOrEqualTo(5 * 3);
                assertThat(db.deadRows()).isZero();

                broker.restart();
                await().atMost(Duration.ofSeconds(60)).until(() -> db.outboxRows() == 0);
                assertThat(relay.status().failed()).isPositive();
            }
            try (Consumed consumed = new Consumed(broker.bootstrapServers(), topic)) {
                consumed.awaitStepKeys(60, Duration.ofSeconds(30));
                assertThat(consumed.stepKeys()).hasSize(60);
                consumed.settle();
                KeyOrder order = consumed.keyOrder();
                assertThat(order.distinct()).isEqualTo(60);
                assertThat(order.violations()).as("%s", order).isEmpty();
            }
        }
    }

    private static OutboxMessage msg(int i) {
        return OutboxMessage.builder(StepKey.of("d-" + i, "s"), "down").routingKey("k" + (i % 5))
                .payload(String.valueOf(i)).build();
    }
}
