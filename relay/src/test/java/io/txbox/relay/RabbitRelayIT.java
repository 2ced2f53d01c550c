package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
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
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

class RabbitRelayIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static final Map<TestDatabase.Kind, Db> DB = new EnumMap<>(TestDatabase.Kind.class);

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    Db db;
    static Connection admin;
    static Channel ch;

    @BeforeAll
    static void setUp() throws Exception {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
        admin = RABBIT.newConnection();
        ch = admin.createChannel();
    }

    @AfterAll
    static void tearDown() throws Exception {
        admin.close();
    }

    static ConnectionFactory factory() {
        return RABBIT.connectionFactory();
    }

    /** A queue or exchange name of this class, deleted after it. */
    static String name(String hint) {
        return RABBIT.name(hint);
    }

    Relay.Builder relay(RabbitPublisher rabbit, String destination, String exchange) {
        return Relay.builder().dataSource(db.ds).tables(db.tables).route(destination, rabbit.exchange(exchange))
                .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(3)).laneLease(Duration.ofSeconds(6))
                .backoff(Duration.ofMillis(50), Duration.ofMillis(200));
    }

    static List<GetResponse> drain(String queue, int expected) {
        List<GetResponse> got = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            GetResponse r;
            while ((r = ch.basicGet(queue, true)) != null) {
                got.add(r);
            }
            return got.size() >= expected;
        });
        return got;
    }

    /** The per-key order oracle fed the messages in arrival order: routing key, and the number after the payload's "p". */
    static KeyOrder keyOrder(List<GetResponse> got) {
        KeyOrder order = new KeyOrder();
        got.forEach(g -> order.add(g.getEnvelope().getRoutingKey(), Long.parseLong(Db.utf8(g.getBody()).substring(1))));
        return order;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_publishesConfirmedPersistentMessagesWithHeaders_inOrderPerRoutingKey(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String exchange = name("ex-" + database.kind());
        String queue = name("q-" + database.kind());
        ch.exchangeDeclare(exchange, "topic", false, true, null);
        ch.queueDeclare(queue, false, false, true, null);
        ch.queueBind(queue, exchange, "#");
        int n = 600;
        long seed = System.nanoTime();
        try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(factory()).build();
                Relay relay = relay(rabbit, "shipping", exchange).build()) {
            relay.start();
            // four writers on their own connections, each key from one writer in sequential
            // transactions, one transaction per writer committed 1.5 s late
            db.sendConcurrently(n, 4, 20, i -> i % 7 % 4, Duration.ofMillis(1_500), seed, i ->
                    OutboxMessage.builder(StepKey.of("order-" + i, "ship"), "shipping")
                            .routingKey("customer-" + (i % 7)).payload("p" + i).contentType("application/json")
                            .header("tenant", "t1").traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                            .build());
            List<GetResponse> got = drain(queue, n);
            assertThat(got).hasSize(n);
            GetResponse first = got.stream().filter(g -> g.getProps().getMessageId().equals("order-0:ship")).findFirst().orElseThrow();
            assertThat(first.getProps().getDeliveryMode()).isEqualTo(2);
            assertThat(first.getProps().getContentType()).isEqualTo("application/json");
            assertThat(first.getEnvelope().getRoutingKey()).isEqualTo("customer-0");
            Map<String, Object> h = first.getProps().getHeaders();
            assertThat(h.get("x-idempotency-key")).hasToString("order-0:ship");
            assertThat(h.get("idempotency-key")).hasToString("order-0:ship");
            assertThat(h.get("txbox-original-key")).hasToString("order-0");
            assertThat(h.get("content-type")).hasToString("application/json");
            assertThat(h.get("traceparent")).hasToString("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
            assertThat(h.get("tenant")).hasToString("t1");
            assertThat(Db.utf8(first.getBody())).isEqualTo("p0");
            KeyOrder order = keyOrder(got);
            assertThat(order.distinct()).isEqualTo(n);
            assertThat(order.violations()).as("writer seed %d: %s", seed, order).isEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            assertThat(relay.status().published()).isEqualTo(n);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_unroutableMessage_isReturnedAndRetriedNotAcked(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String exchange = name("noroute-" + database.kind());
        String queue = name("late-" + database.kind());
        ch.exchangeDeclare(exchange, "direct", false, true, null);
        db.send(Db.message("unroutable-1", "nowhere", "rk-1", "hello"));
        try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(factory()).build();
                Relay relay = relay(rabbit, "nowhere", exchange).maxAttempts(1000).build()) {
            relay.start();
            // the broker returned it (312 NO_ROUTE): the row stays, with the attempt and reason recorded
            await().atMost(Duration.ofSeconds(10)).until(() -> db.queryLong("SELECT attempts FROM "
                    + db.table(db.tables.outboxTable()) + " WHERE step_key = 'unroutable-1:step'") >= 2);
            assertThat(db.queryString("SELECT last_error FROM " + db.table(db.tables.outboxTable())
                    + " WHERE step_key = 'unroutable-1:step'")).contains("312").contains("NO_ROUTE");
            // once a queue is bound, the retry delivers it and only then is the row deleted
            ch.queueDeclare(queue, false, false, true, null);
            ch.queueBind(queue, exchange, "rk-1");
            List<GetResponse> got = drain(queue, 1);
            assertThat(Db.utf8(got.get(0).getBody())).isEqualTo("hello");
            await().atMost(Duration.ofSeconds(10)).until(() -> db.queryLong("SELECT count(*) FROM "
                    + db.table(db.tables.outboxTable()) + " WHERE step_key = 'unroutable-1:step'") == 0);
        }
    }

    /**
     * One worker chains many small batches, and one routing key is returned unroutable in the
     * middle of every batch: every other key still arrives once each, in order, and the returned
     * key's rows end in the dead-letter table rather than being acked into nowhere (the destination
     * moves on: by default the returned key would park at its first dead row, see PoisonKeyIT).
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_returnsMidWindow_otherKeysArriveOnceInOrder(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        String exchange = name("window-" + database.kind());
        String queue = name("windowq-" + database.kind());
        ch.exchangeDeclare(exchange, "direct", false, true, null);
        ch.queueDeclare(queue, false, false, true, null);
        for (int k = 0; k < 6; k++) {
            ch.queueBind(queue, exchange, "rk-" + k); // rk-6 has no binding: returned (312 NO_ROUTE)
        }
        int n = 1_400;
        try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(factory()).build();
                Relay relay = relay(rabbit, "window", exchange).workers(1).batchSize(50).maxAttempts(2)
                        .moveOnDestinations("window").build()) {
            relay.start();
            db.sendConcurrently(n, 4, 50, i -> i % 7 % 4, Duration.ZERO, 0, i -> Db.message("w" + i, "window", "rk-" + (i % 7), "p" + i));
            List<GetResponse> got = drain(queue, n / 7 * 6);
            KeyOrder order = keyOrder(got);
            assertThat(order.duplicates()).as("%s", order).isZero();
            assertThat(order.violations()).as("%s", order).isEmpty();
            for (int k = 0; k < 6; k++) {
                String rk = "rk-" + k;
                assertThat(got).filteredOn(g -> g.getEnvelope().getRoutingKey().equals(rk)).as(rk).hasSize(n / 7);
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> db.outboxRows() == 0);
            assertThat(db.deadRows()).isEqualTo(n / 7);
            assertThat(db.queryString("SELECT min(reason) FROM " + db.table(db.tables.outboxDeadTable())))
                    .contains("312");
        }
    }
}
