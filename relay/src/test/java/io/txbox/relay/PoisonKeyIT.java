package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.GetResponse;
import io.txbox.outbox.Lanes;
import io.txbox.outbox.OutboxMessage;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Poison isolation per routing key, on both databases and both brokers: a row that fails every
 * time holds back only its own key's later rows (the lane's other keys flow at once, in order);
 * once dead-lettered it parks its key, whose later rows wait in the outbox in order through a
 * relay restart and a takeover by another relay, until {@link DeadLetters#retryKey} resumes the
 * key in order or {@link DeadLetters#skipKey} releases it; {@link Relay.Builder#moveOnDestinations}
 * dead-letters and moves on. Every oracle reads back from the broker or the database.
 */
class PoisonKeyIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static Stream<Arguments> cases() {
        return DBS.all().stream().flatMap(db -> Stream.of("kafka", "rabbitmq").map(b -> Arguments.of(db, b)));
    }

    /** A publisher that fails every record of the {@link #failing} routing keys with a retryable error. */
    static final class FailingKeys implements Publisher {
        final Publisher inner;
        final Set<String> failing = ConcurrentHashMap.newKeySet();

        FailingKeys(Publisher inner) {
            this.inner = inner;
        }

        @Override
        public String broker() {
            return inner.broker();
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            if (record.routingKey() != null && failing.contains(record.routingKey())) {
                return CompletableFuture.failedFuture(PublishException.retryable("poison " + record.routingKey(), null));
            }
            return inner.publish(target, record);
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    /** Where the relay publishes and how the test reads it back: payloads in arrival order. */
    interface Sink extends AutoCloseable {
        Route route(Publisher publisher);

        Publisher publisher();

        /** Payloads read so far, in arrival order, after waiting until {@code n} have come. */
        List<String> awaitPayloads(int n);

        @Override
        void close() throws Exception;
    }

    static Sink sink(String broker, String hint) throws Exception {
        if (broker.equals("kafka")) {
            String topic = KAFKA.uniqueTopic(hint);
            KAFKA.createTopic(topic, 2);
            Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic);
            return new Sink() {
                @Override
                public Route route(Publisher publisher) {
                    return Route.of(publisher, topic);
                }

                @Override
                public Publisher publisher() {
                    return KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
                }

                @Override
                public List<String> awaitPayloads(int n) {
                    consumed.awaitStepKeys(n, Duration.ofSeconds(20));
                    return consumed.records.stream().map(Consumed::value).toList();
                }

                @Override
                public void close() {
                    consumed.close();
                }
            };
        }
        String exchange = RABBIT.name(hint);
        com.rabbitmq.client.Connection admin = RABBIT.connectionFactory().newConnection();
        Channel ch = admin.createChannel();
        ch.exchangeDeclare(exchange, "fanout", false, true, null);
        ch.queueDeclare(exchange, false, false, true, null);
        ch.queueBind(exchange, exchange, "");
        List<String> got = new ArrayList<>();
        return new Sink() {
            @Override
            public Route route(Publisher publisher) {
                return Route.of(publisher, exchange);
            }

            @Override
            public Publisher publisher() {
                return RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
            }

            @Override
            public List<String> awaitPayloads(int n) {
                await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(10)).until(() -> {
                    GetResponse r;
                    while ((r = ch.basicGet(exchange, true)) != null) {
                        got.add(new String(r.getBody(), StandardCharsets.UTF_8));
                    }
                    return got.stream().distinct().count() >= n;
                });
                return List.copyOf(got);
            }

            @Override
            public void close() throws Exception {
                admin.close();
            }
        };
    }

    /** {@code count} routing keys other than {@code key} in its lane. */
    static List<String> laneMates(String key, int count) {
        short lane = Lanes.of(key, "x");
        List<String> mates = new ArrayList<>();
        for (int i = 0; mates.size() < count; i++) {
            if (Lanes.of("h" + i, "x") == lane) {
                mates.add("h" + i);
            }
        }
        return mates;
    }

    static OutboxMessage row(String destination, String key, int seq) {
        return Db.message(key + "-" + seq + "-" + destination, destination, key, key + ":" + seq);
    }

    private static Relay.Builder relay(Db db, String destination, Route route, String id) {
        return Relay.builder().dataSource(db.ds).tables(db.tables).route(destination, route).relayId(id).workers(1)
                .pollInterval(Duration.ofMillis(20)).backlogInterval(Duration.ZERO).closePublishers(false);
    }

    private static List<String> of(List<String> payloads, String key) {
        return payloads.stream().filter(p -> p.startsWith(key + ":")).toList();
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("cases")
    void poisonRow_parksOnlyItsKey_untilRetriedOrSkipped(TestDatabase database, String broker) throws Exception {
        Db db = new Db(database, database.newSchema("poison"));
        DeadLetters dead = DeadLetters.of(db.ds, db.tables);
        String d = "orders";
        List<String> mates = laneMates("p", 3);
        try (Sink sink = sink(broker, "poison-" + database.kind().name().toLowerCase()); FailingKeys failing = new FailingKeys(sink.publisher())) {
            failing.failing.addAll(List.of("p", "q"));
            // the poison key first in its lane, interleaved with healthy keys of the same lane and others
            List<OutboxMessage> first = new ArrayList<>();
            for (int seq = 1; seq <= 3; seq++) {
                first.add(row(d, "p", seq));
                for (String m : mates) {
                    first.add(row(d, m, seq));
                }
                first.add(row(d, "other", seq));
            }
            db.send(first.toArray(OutboxMessage[]::new));

            // a long backoff: the failing row is retried in 10 minutes, its lane's other keys go on now
            try (Relay relay = relay(db, d, sink.route(failing), "r1").maxAttempts(3)
                    .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10)).build()) {
                relay.start();
                List<String> got = sink.awaitPayloads(12);
                for (String m : mates) {
                    assertThat(of(got, m)).as("healthy key " + m + " of the poison key's lane").containsExactly(
                            m + ":1", m + ":2", m + ":3");
                }
                assertThat(of(got, "other")).containsExactly("other:1", "other:2", "other:3");
                assertThat(of(got, "p")).isEmpty();
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 3);
                assertThat(db.queryLong("SELECT attempts FROM " + db.table(db.tables.outboxTable())
                        + " WHERE step_key = ?", "p-1-orders:step")).isEqualTo(1);
                assertThat(dead.parkedKeys(10)).isEmpty();
            }
            // dead-lettered at the first failure: the key parks, its later rows wait
            db.execute("UPDATE " + db.table(db.tables.outboxTable()) + " SET available_at = created_at");
            try (Relay relay = relay(db, d, sink.route(failing), "r2").maxAttempts(1).build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(20)).until(() -> dead.parkedKeys(10).size() == 1);
                DeadLetters.ParkedKey parked = dead.parkedKeys(10).get(0);
                assertThat(parked.destination()).isEqualTo(d);
                assertThat(parked.routingKey()).isEqualTo("p");
                assertThat(parked.waiting()).isEqualTo(2);
                assertThat(dead.list(10)).singleElement().satisfies(x -> assertThat(x.id()).isEqualTo(parked.deadId()));
                db.send(row(d, "p", 4), row(d, mates.get(0), 4));
                assertThat(of(sink.awaitPayloads(13), mates.get(0))).endsWith(mates.get(0) + ":4");
            }
            // another relay takes the lanes over: the key stays parked, its rows wait in order
            try (Relay relay = relay(db, d, sink.route(failing), "r3").maxAttempts(1).build()) {
                relay.start();
                db.send(row(d, mates.get(1), 4));
                List<String> got = sink.awaitPayloads(14);
                assertThat(of(got, mates.get(1))).endsWith(mates.get(1) + ":4");
                assertThat(of(got, "p")).isEmpty();
                assertThat(dead.parkedKeys(10)).singleElement().satisfies(k -> assertThat(k.waiting()).isEqualTo(3));
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 3); // deleted after its confirmation

                // the poison is fixed; the operator retries the key: the dead row first, then the rest in order
                failing.failing.remove("p");
                assertThat(dead.retryKey(d, "p").requeued()).isEqualTo(1);
                got = sink.awaitPayloads(18);
                assertThat(of(got, "p")).containsExactly("p:1", "p:2", "p:3", "p:4");
                await().atMost(Duration.ofSeconds(10)).until(() -> dead.parked().keys() == 0 && db.outboxRows() == 0);
                assertThat(db.count(db.tables.outboxKeyHoldTable())).isZero();

                // skip: the dead row is dropped for good, the key's waiting rows go on
                db.send(row(d, "q", 1), row(d, "q", 2), row(d, "q", 3));
                await().atMost(Duration.ofSeconds(20)).until(() -> dead.parkedKeys(10).size() == 1);
                assertThat(dead.skipKey(d, "p")).isFalse();
                failing.failing.remove("q");
                assertThat(dead.skipKey(d, "q")).isTrue();
                got = sink.awaitPayloads(20);
                assertThat(of(got, "q")).containsExactly("q:2", "q:3");
                await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
                assertThat(dead.count()).isZero();
                assertThat(dead.parked()).isEqualTo(new DeadLetters.Parked(0, null));
                assertThat(KeyOrder.ofPayloads(got).violations()).isEmpty();
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("cases")
    void moveOnDestination_deadLettersAndGoesOn(TestDatabase database, String broker) throws Exception {
        Db db = new Db(database, database.newSchema("moveon"));
        DeadLetters dead = DeadLetters.of(db.ds, db.tables);
        try (Sink sink = sink(broker, "moveon-" + database.kind().name().toLowerCase()); FailingKeys failing = new FailingKeys(sink.publisher())) {
            failing.failing.add("m");
            db.send(row("events", "m", 1), row("events", "m", 2), row("events", null, 1), row("events", "ok", 1));
            try (Relay relay = relay(db, "events", sink.route(failing), "m1").maxAttempts(1).moveOnDestinations("events")
                    .build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(20)).until(() -> dead.count() == 2 && db.outboxRows() == 0);
                assertThat(dead.parkedKeys(10)).isEmpty();
                assertThat(dead.list(10)).extracting(DeadLetters.DeadLetter::routingKey).containsOnly("m");
                assertThat(sink.awaitPayloads(2)).contains("ok:1").noneMatch(p -> p.startsWith("m:"));
            }
        }
    }
}
