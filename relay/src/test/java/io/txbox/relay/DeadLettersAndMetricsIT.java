package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.relay.micrometer.RelayMetrics;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

class DeadLettersAndMetricsIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadLetters_listRetryPurge_andMetricsCountEveryOutcome(TestDatabase database) throws Exception {
        Db db = new Db(database);
        DeadLetters dead = DeadLetters.of(db.ds, db.tables);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        String exchange = RABBIT.name("dl-" + database.kind().name().toLowerCase());
        String queue = RABBIT.name("dlq-" + database.kind().name().toLowerCase());
        try (Connection admin = RABBIT.connectionFactory().newConnection()) {
            Channel ch = admin.createChannel();
            ch.exchangeDeclare(exchange, "direct", false, true, null);
            ch.queueDeclare(queue, false, false, true, null);
            ch.queueBind(queue, exchange, "k");
            db.send(Db.message("ok-1", "known", "k", "a"), Db.message("ok-2", "known", "k", "b"),
                    Db.message("late-1", "later", "k", "c"));
            try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
                    Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).route("known", rabbit.exchange(exchange))
                            .pollInterval(Duration.ofMillis(20)).backlogInterval(Duration.ofMillis(100))
                            .closePublishers(false).listener(RelayMetrics.of(registry)).build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0
                        && relay.status().published() == 2 && relay.status().deadLettered() == 1);
                // the listener hears about a batch just after the status counters move
                await().atMost(Duration.ofSeconds(5)).until(() -> registry.find(RelayMetrics.LATENCY)
                        .tag("destination", "known").timer() != null
                        && registry.find(RelayMetrics.DEAD_LETTERED).tag("destination", "later").counter() != null
                        && registry.find(RelayMetrics.PUBLISHED).tag("destination", "known").counter() != null
                        && registry.find(RelayMetrics.PUBLISHED).tag("destination", "known").counter().count() == 2);
                assertThat(registry.get(RelayMetrics.PUBLISHED).tag("destination", "known").tag("broker", "rabbitmq")
                        .counter().count()).isEqualTo(2);
                assertThat(registry.get(RelayMetrics.DEAD_LETTERED).tag("destination", "later").tag("broker", "none")
                        .counter().count()).isEqualTo(1);
                assertThat(registry.get(RelayMetrics.LATENCY).tag("destination", "known").timer().count()).isPositive();
                await().atMost(Duration.ofSeconds(5)).until(() -> registry.get(RelayMetrics.BACKLOG).gauge().value() == 0);
                assertThat(registry.get(RelayMetrics.OLDEST_AGE).gauge().value()).isZero();
                assertThat(relay.health(Duration.ofSeconds(2)).up()).isTrue();
            }

            List<DeadLetters.DeadLetter> list = dead.list(10);
            assertThat(list).singleElement().satisfies(d -> {
                assertThat(d.stepKey()).isEqualTo("late-1:step");
                assertThat(d.destination()).isEqualTo("later");
                assertThat(d.reason()).contains("no route");
            });
            long id = list.get(0).id();
            assertThat(dead.retry(id).requeued()).isEqualTo(1);
            assertThat(dead.retry(id).total()).isZero();
            assertThat(dead.count()).isZero();
            assertThat(db.queryLong("SELECT id FROM " + db.table(db.tables.outboxTable())
                    + " WHERE step_key = 'late-1:step' AND attempts = 0")).isEqualTo(id);

            // with a route for "later" now, the retried row goes out
            try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
                    Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).route("later", rabbit.exchange(exchange))
                            .pollInterval(Duration.ofMillis(20)).build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            }
            List<com.rabbitmq.client.GetResponse> got = new java.util.ArrayList<>();
            await().atMost(Duration.ofSeconds(5)).until(() -> {
                var r = ch.basicGet(queue, true);
                if (r != null) {
                    got.add(r);
                }
                return got.size() == 3;
            });
            assertThat(got).extracting(g -> g.getProps().getMessageId()).containsExactly("ok-1:step", "ok-2:step", "late-1:step");

            db.send(Db.message("late-2", "later", "k", "d"), Db.message("late-3", "later", "k", "e"));
            try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
                    Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).route("known", rabbit.exchange(exchange))
                            .pollInterval(Duration.ofMillis(20)).build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> dead.count() == 2);
            }
            assertThat(dead.purgeOlderThan(Duration.ofHours(1))).isZero();
            assertThat(dead.retryAll().requeued()).isEqualTo(2);
            assertThat(db.outboxRows()).isEqualTo(2);
            db.execute("DELETE FROM " + db.table(db.tables.outboxTable()));
            db.send(Db.message("late-4", "later", "k", "f"));
            try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
                    Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).route("known", rabbit.exchange(exchange))
                            .pollInterval(Duration.ofMillis(20)).build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> dead.count() == 1);
            }
            assertThat(dead.purgeOlderThan(Duration.ZERO)).isEqualTo(1);
            assertThat(dead.count()).isZero();
        }
    }
}
