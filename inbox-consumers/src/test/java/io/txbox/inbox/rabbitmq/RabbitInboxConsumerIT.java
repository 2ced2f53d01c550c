package io.txbox.inbox.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.CommitCounting;
import io.txbox.inbox.consumer.CountingListener;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.Effects;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.params.provider.MethodSource;

/** The RabbitMQ consumer against a real broker and a real database, PostgreSQL and MariaDB. */
class RabbitInboxConsumerIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Duration FAST_INITIAL = Duration.ofMillis(100);
    static final Duration FAST_MAX = Duration.ofMillis(400);

    static final Map<TestDatabase.Kind, Effects> EFFECTS = new EnumMap<>(TestDatabase.Kind.class);
    static Connection publisher;
    static Channel channel;
    final List<InboxConsumer> started = new ArrayList<>();
    TestDatabase db;
    TxboxTables tables;
    Effects effects;

    @BeforeAll
    static void setUp() throws Exception {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
            EFFECTS.put(d.kind(), new Effects(d));
        }
        publisher = RABBIT.connectionFactory().newConnection("txbox-test-publisher");
        channel = publisher.createChannel();
    }

    @AfterAll
    static void tearDown() throws Exception {
        publisher.close();
    }

    @AfterEach
    void closeConsumers() {
        started.forEach(InboxConsumer::close);
    }

    /** Runs the test on {@code database}. */
    private void use(TestDatabase database) {
        db = database;
        tables = TxboxTables.inSchema(database.schema());
        effects = EFFECTS.get(database.kind());
    }

    /** Each database with each batch size. */
    static Stream<Arguments> databasesAndBatchSizes() {
        return DBS.all().stream().flatMap(d -> IntStream.of(1, 10)
                .mapToObj(size -> Arguments.of(Named.of(d.kind().toString(), d), size)));
    }

    private static String queue(String hint) throws Exception {
        String queue = RABBIT.name(hint);
        channel.queueDeclare(queue, true, false, false, null);
        RABBIT.track(queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX); // the consumer declares it
        return queue;
    }

    /** A consumer name no other run shares, since it also names the connection on the shared broker. */
    private static String consumerName(String hint) {
        return "rabbit-" + hint + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private RabbitInboxConsumer.Builder builder(String consumer, String queue, Handler handler) {
        return builder(consumer, queue, db.dataSource(), handler);
    }

    private RabbitInboxConsumer.Builder builder(String consumer, String queue, DataSource ds, Handler handler) {
        return RabbitInboxConsumer.builder(Inbox.builder(consumer).tables(tables).maxAttempts(3).build(), ds, handler)
                .connectionFactory(RABBIT.connectionFactory())
                .queue(queue)
                .deadLetterExchange(queue) // one per test, cleaned up with the queue's name
                .backoff(FAST_INITIAL, FAST_MAX);
    }

    private RabbitInboxConsumer start(RabbitInboxConsumer consumer) {
        started.add(consumer);
        consumer.start();
        return consumer;
    }

    private static void send(String queue, String key, String payload, Map<String, Object> headers) throws Exception {
        Map<String, Object> all = new HashMap<>(headers);
        if (key != null) {
            all.put("idempotency-key", key);
        }
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().headers(all).deliveryMode(2).build();
        channel.basicPublish("", queue, props, payload.getBytes(UTF_8));
    }

    private static List<GetResponse> deadLetters(String queue, int expected) throws Exception {
        List<GetResponse> out = new ArrayList<>();
        await().atMost(WAIT).until(() -> {
            GetResponse r = channel.basicGet(queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX, true);
            if (r != null) {
                out.add(r);
            }
            return out.size() >= expected;
        });
        return out;
    }

    private static String header(GetResponse r, String name) {
        Object v = r.getProps().getHeaders().get(name);
        return v == null ? null : v.toString();
    }

    /**
     * In batch mode the messages queued before the consumer starts share transactions, and the
     * poison message's failures roll back only its own attempt.
     */
    @ParameterizedTest(name = "{0}, batchSize {1}")
    @MethodSource("databasesAndBatchSizes")
    void rabbit_poisonMessage_deadLetteredWithReasonWhileOthersProcessed(TestDatabase database, int batchSize)
            throws Exception {
        use(database);
        String queue = queue("poison");
        String name = consumerName("poison");
        Set<Long> transactions = ConcurrentHashMap.newKeySet();
        Handler handler = effects.recordingTransactions(transactions, (tx, m) -> {
            if (m.key().equals("poison")) {
                throw new IllegalStateException("cannot parse order");
            }
            return effects.recorder(name).handle(tx, m);
        });

        send(queue, "poison", "garbage", Map.of("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        for (int i = 0; i < 20; i++) {
            send(queue, "ok-" + i, "fine", Map.of());
        }
        start(builder(name, queue, handler).batchSize(batchSize).build());

        List<GetResponse> dead = deadLetters(queue, 1);
        await().atMost(WAIT).until(() -> effects.total(name) == 20);

        GetResponse letter = dead.get(0);
        assertThat(new String(letter.getBody(), UTF_8)).isEqualTo("garbage");
        assertThat(header(letter, DeadLetterHeaders.REASON)).contains("dead after 3 attempts").contains("cannot parse order");
        assertThat(header(letter, DeadLetterHeaders.ORIGINAL_QUEUE)).isEqualTo(queue);
        assertThat(header(letter, DeadLetterHeaders.ORIGINAL_ROUTING_KEY)).isEqualTo(queue);
        assertThat(header(letter, DeadLetterHeaders.ORIGINAL_EXCHANGE)).isEmpty();
        assertThat(header(letter, DeadLetterHeaders.CONSUMER)).isEqualTo(name);
        assertThat(header(letter, "idempotency-key")).isEqualTo("poison");
        assertThat(header(letter, "traceparent")).isEqualTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        assertThat(effects.countsByKey(name)).hasSize(20).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
        await().atMost(WAIT).until(() -> channel.messageCount(queue) == 0);
        if (batchSize == 1) {
            assertThat(transactions).as("one transaction per message").hasSize(20);
        } else {
            assertThat(transactions).as("messages sharing transactions").hasSizeLessThan(20);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_missingKey_deadLetteredWithReason(TestDatabase database) throws Exception {
        use(database);
        String queue = queue("missing");
        String name = consumerName("missing");
        start(builder(name, queue, effects.recorder(name)).build());

        send(queue, null, "no key here", Map.of());
        send(queue, "present", "has a key", Map.of());

        List<GetResponse> dead = deadLetters(queue, 1);
        await().atMost(WAIT).until(() -> effects.total(name) == 1);
        assertThat(new String(dead.get(0).getBody(), UTF_8)).isEqualTo("no key here");
        assertThat(header(dead.get(0), DeadLetterHeaders.REASON))
                .isEqualTo("idempotency key header \"idempotency-key\" is missing");
        assertThat(effects.countsByKey(name)).containsOnlyKeys("present");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_transientFailure_requeuedAfterBackoffNotHot_andHandlerSeesRedelivered(TestDatabase database) throws Exception {
        use(database);
        String queue = queue("flaky");
        String name = consumerName("flaky");
        List<Instant> attempts = new CopyOnWriteArrayList<>();
        List<Boolean> redelivered = new CopyOnWriteArrayList<>();
        Handler handler = (tx, m) -> {
            attempts.add(Instant.now());
            redelivered.add(m.redelivered());
            if (attempts.size() < 3) {
                throw new IllegalStateException("downstream busy");
            }
            return effects.recorder(name).handle(tx, m);
        };
        start(builder(name, queue, handler).backoff(Duration.ofMillis(300), Duration.ofSeconds(1))
                .prefetch(5).build());

        send(queue, "flaky-1", "x", Map.of("traceparent", "00-aa-bb-01"));

        await().atMost(WAIT).until(() -> effects.total(name) == 1);
        assertThat(attempts).hasSize(3);
        // Backoff 300 ms then 600 ms, each with jitter down to half: never a hot loop.
        assertThat(Duration.between(attempts.get(0), attempts.get(1))).isGreaterThanOrEqualTo(Duration.ofMillis(150));
        assertThat(Duration.between(attempts.get(1), attempts.get(2))).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(redelivered).containsExactly(false, true, true);
        assertThat(effects.count(name, "flaky-1")).isEqualTo(1);
        assertThat(effects.traceparent(name, "flaky-1")).isEqualTo("00-aa-bb-01");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_connectionClosedByBroker_recoversAndContinues(TestDatabase database) throws Exception {
        use(database);
        String queue = queue("recover");
        String name = consumerName("recover");
        CountingListener listener = new CountingListener();
        RabbitInboxConsumer consumer = start(builder(name, queue, effects.recorder(name)).listener(listener).build());
        send(queue, "before", "x", Map.of());
        await().atMost(WAIT).until(() -> effects.total(name) == 1);

        assertThat(RABBIT.closeConnections("txbox-" + name)).isPositive();
        await().atMost(WAIT).until(() -> listener.errors.get() > 0);
        send(queue, "after", "x", Map.of());

        await().atMost(WAIT).until(() -> effects.total(name) == 2);
        assertThat(effects.countsByKey(name)).containsOnlyKeys("before", "after");
        assertThat(consumer.isRunning()).isTrue();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_gracefulClose_finishesInFlightAndLosesNothing(TestDatabase database) throws Exception {
        use(database);
        String queue = queue("graceful");
        String name = consumerName("graceful");
        Handler slow = effects.slowRecorder(name, 0.02);
        for (int i = 0; i < 40; i++) {
            send(queue, "g-" + i, "x", Map.of());
        }
        RabbitInboxConsumer first = start(builder(name, queue, slow).prefetch(10).build());
        await().atMost(WAIT).until(() -> effects.total(name) >= 5);
        first.close();
        assertThat(first.isRunning()).isFalse();
        int afterClose = effects.total(name);

        CountingListener listener = new CountingListener();
        start(builder(name, queue, slow).listener(listener).build());

        await().atMost(WAIT).until(() -> effects.countsByKey(name).size() == 40);
        assertThat(afterClose).isLessThan(40);
        assertThat(effects.countsByKey(name)).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
        assertThat(listener.count(Outcome.Status.DUPLICATE)).as("the in-flight message was acked on close").isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbit_concurrentChannels_eachMessageOnce(TestDatabase database) throws Exception {
        use(database);
        String queue = queue("concurrent");
        String name = consumerName("concurrent");
        Map<String, Boolean> seenThreads = new java.util.concurrent.ConcurrentHashMap<>();
        // The first three deliveries each wait until all three are in the handler at once, which
        // only three concurrent channels can do; later ones pass straight through.
        java.util.concurrent.CountDownLatch threeAtOnce = new java.util.concurrent.CountDownLatch(3);
        AtomicInteger inHandler = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        Handler handler = (tx, m) -> {
            mostAtOnce.accumulateAndGet(inHandler.incrementAndGet(), Math::max);
            try {
                seenThreads.put(Thread.currentThread().getName(), true);
                threeAtOnce.countDown();
                if (!threeAtOnce.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never three deliveries in the handler at once");
                }
                return effects.recorder(name).handle(tx, m);
            } finally {
                inHandler.decrementAndGet();
            }
        };
        start(builder(name, queue, handler).concurrency(3).prefetch(2).build());
        for (int i = 0; i < 60; i++) {
            send(queue, "c-" + i, "x", Map.of());
        }

        await().atMost(WAIT).until(() -> effects.total(name) == 60);
        assertThat(effects.countsByKey(name)).hasSize(60).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
        assertThat(mostAtOnce).as("deliveries in the handler at once: concurrency(3), no more").hasValue(3);
        assertThat(seenThreads.keySet()).hasSizeGreaterThanOrEqualTo(3)
                .allSatisfy(t -> assertThat(t).startsWith("txbox-rabbit-" + name));
    }

    /**
     * One channel, the messages queued before the start, one transaction each with every COMMIT
     * sent with the next message's inbox insert: a duplicate is skipped, a message whose handler
     * fails once is retried, a poison message is dead-lettered, and a message whose COMMIT a
     * deferred trigger refuses twice (in the chained round trip, then alone) is not acked until
     * a later delivery commits it. Every business row once, every message acked once.
     */
    // PostgreSQL only: MariaDB chains no COMMIT to the next insert, nor has a deferred trigger to refuse one
    @Test
    void rabbit_chainedCommits_duplicateFailuresAndARefusedCommit_eachMessageOnceAndAllAcked() throws Exception {
        use(DBS.postgres());
        String queue = queue("chain");
        String name = consumerName("chain");
        effects.refuseCommits(name, "commit-refused", 2);
        Handler handler = effects.chainScenario(name);
        CountingListener listener = new CountingListener();
        CommitCounting ds = new CommitCounting(db.dataSource());
        List<String> keys = Effects.CHAIN_KEYS;
        for (String key : keys) {
            send(queue, key, "x", Map.of());
        }
        RabbitInboxConsumer consumer = start(builder(name, queue, ds.proxy, handler).listener(listener).build());

        List<GetResponse> dead = deadLetters(queue, 1);
        await().atMost(WAIT).until(() -> effects.total(name) == 8 && listener.acks.get() == keys.size());
        consumer.close();

        assertThat(header(dead.get(0), "idempotency-key")).isEqualTo("poison");
        assertThat(effects.countsByKey(name)).hasSize(8).allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1))
                .doesNotContainKey("poison");
        assertThat(channel.messageCount(queue)).as("left in the queue after close").isZero();
        assertThat(listener.acks).as("acks").hasValue(keys.size());
        assertThat(listener.count(Outcome.Status.DUPLICATE)).isEqualTo(1);
        // flaky once, the refused commit once (its second try, alone), poison twice before DEAD
        assertThat(listener.retries).hasSize(4);
        assertThat(ds.chained.get()).as("statements carrying a COMMIT").isPositive();
    }

    /**
     * close() in the middle of a chain stops it after the message in progress: every committed
     * message is acked, the rest go back to the queue, and the next consumer runs each once.
     */
    // PostgreSQL only: MariaDB commits each transaction alone (no COMMIT chained to the next insert)
    @Test
    void rabbit_chainedCommits_closeMidChain_acksWhatCommittedAndLosesNothing() throws Exception {
        use(DBS.postgres());
        String queue = queue("chain-close");
        String name = consumerName("chain-close");
        Handler slow = effects.slowRecorder(name, 0.02);
        for (int i = 0; i < 40; i++) {
            send(queue, "cc-" + i, "x", Map.of());
        }
        CommitCounting ds = new CommitCounting(db.dataSource());
        RabbitInboxConsumer first = start(builder(name, queue, ds.proxy, slow).prefetch(40).build());
        await().atMost(WAIT).until(() -> effects.total(name) >= 5);
        first.close();
        assertThat(first.isRunning()).isFalse();
        int afterClose = effects.total(name);
        assertThat(afterClose).as("the chain stopped before its end").isLessThan(40);
        assertThat(ds.chained.get()).as("statements carrying a COMMIT").isPositive();
        await().atMost(WAIT).until(() -> channel.messageCount(queue) == 40 - afterClose);

        CountingListener listener = new CountingListener();
        start(builder(name, queue, slow).listener(listener).build());

        await().atMost(WAIT).until(() -> effects.countsByKey(name).size() == 40);
        assertThat(effects.countsByKey(name)).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
        assertThat(listener.count(Outcome.Status.DUPLICATE)).as("every committed message was acked on close").isZero();
    }
}
