package io.txbox.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * {@code consumer-kafka} and {@code consumer-rabbitmq}: drain a backlog of {@code --messages}
 * messages already in the broker, each with an idempotency key, through four consumers in the
 * same run, each on its own copy of the backlog:
 *
 * <ul>
 *   <li>bare: kafka-clients / amqp-client by hand, one business insert per message in its own
 *       transaction, offsets committed after each poll / each message acked after its commit;
 *   <li>txbox: {@code KafkaInboxConsumer} / {@code RabbitInboxConsumer} with the default one
 *       transaction per message (inbox entry + the same insert);
 *   <li>txbox batch: the same with {@code batchSize(--batch)};
 *   <li>by hand ({@link ConsumerByHand}): kafka-clients / amqp-client by hand sending per message
 *       the statements txbox's consumer sends for a first delivery on the database (the inbox
 *       receive captured from txbox, the same insert, the commit; on PostgreSQL each commit with
 *       the next message's receive), with txbox's offset and ack discipline.
 * </ul>
 *
 * <p>Each rate is measured from the first message handled to the last, so group joins and
 * connection set-up do not count, and is the mean of {@code --rounds} (default 2) passes run in
 * ABBA order. Figures {@code ratio_to_bare} (txbox / bare, target &ge; 0.90),
 * {@code ratio_to_by_hand} (txbox / by hand, target &ge; 0.95) and {@code batch_speedup} (txbox
 * batch / txbox, target &ge; 3). Every pass checks that each key took effect exactly once. Entry point for a registry of scenarios: {@link #kafka()},
 * {@link #rabbitmq()}.
 */
final class ConsumerThroughput extends Scenario {
    private static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(10);

    private final Broker broker;
    private int messages;
    private int batch;
    private int partitions;
    private int prefetch;
    private int payloadBytes;
    private int warmup;
    private boolean broken;
    private boolean traceSql;
    private List<Kind> kinds;
    /** The receive txbox's consumer sends, captured once for the by-hand consumer. */
    private InboxReplay replay;
    private int rounds;
    private int passes;
    /** The RabbitMQ broker's processes when it runs here (the Kafka broker is a child process, counted anyway). */
    private List<ProcessHandle> brokerProcesses = List.of();
    /** CPU seconds of the measured passes per consumer, as {@link CpuAccount#since()} splits them. */
    private final Map<Kind, double[]> cpuSeconds = new java.util.EnumMap<>(Kind.class);
    private ConsumerPoison poison;

    private ConsumerThroughput(Broker broker) {
        this.broker = broker;
    }

    /** The {@code consumer-kafka} scenario. */
    static Scenario kafka() {
        return new ConsumerThroughput(Broker.KAFKA);
    }

    /** The {@code consumer-rabbitmq} scenario. */
    static Scenario rabbitmq() {
        return new ConsumerThroughput(Broker.RABBITMQ);
    }

    @Override
    void configure(Options o) {
        messages = o.intValue("messages", 20_000);
        batch = o.intValue("batch", 100);
        partitions = o.intValue("partitions", 1);
        prefetch = o.intValue("prefetch", Math.max(250, 2 * batch));
        payloadBytes = o.intValue("payload", 200);
        warmup = o.intValue("warmup", Math.min(2_000, messages / 10));
        traceSql = o.flag("trace-sql");
        rounds = o.intValue("rounds", 2);
        if (rounds < 1) {
            throw new Options.UsageException("need --rounds >= 1");
        }
        poison = ConsumerPoison.configure(o, broker == Broker.KAFKA, messages, partitions, payloadBytes);
        kinds = List.of(Kind.BARE, Kind.TXBOX, Kind.TXBOX_BATCH, Kind.BY_HAND);
        if (messages < 1 || batch < 2 || batch > 1000 || partitions < 1 || prefetch < batch || warmup < 0) {
            throw new Options.UsageException("need --messages >= 1, --batch 2..1000, --partitions >= 1, "
                    + "--prefetch >= --batch, --warmup >= 0");
        }
    }

    @Override
    boolean failedCorrectness() {
        return broken || (poison != null && poison.broken);
    }

    @Override
    void run() throws Exception {
        if (poison != null) {
            poison.run(env, report);
            return;
        }
        replay = ConsumerByHand.capture(env);
        brokerProcesses = broker == Broker.RABBITMQ ? CpuAccount.localRabbit() : List.of();
        log("by hand: txbox's receive%s", replay.chainsCommits() ? ", each commit sent with the next receive" : "");
        if (warmup > 0) {
            log("warm-up: %d messages through each consumer", warmup);
            for (Kind kind : kinds) {
                pass(kind, warmup);
            }
        }
        // ABBA order (bare, txbox, batch, then batch, txbox, bare, ...): a load that drifts
        // during the run weighs on every consumer alike. Each rate is the mean of its rounds.
        Map<Kind, double[]> rates = new java.util.EnumMap<>(Kind.class);
        for (Kind kind : kinds) {
            rates.put(kind, new double[rounds]);
        }
        for (int r = 0; r < rounds; r++) {
            List<Kind> order = new java.util.ArrayList<>(kinds);
            if (r % 2 == 1) {
                java.util.Collections.reverse(order);
            }
            for (Kind kind : order) {
                rates.get(kind)[r] = pass(kind, messages);
            }
        }
        double bare = java.util.Arrays.stream(rates.get(Kind.BARE)).average().orElse(0);
        double txbox = java.util.Arrays.stream(rates.get(Kind.TXBOX)).average().orElse(0);
        double batched = java.util.Arrays.stream(rates.get(Kind.TXBOX_BATCH)).average().orElse(0);
        double byHand = java.util.Arrays.stream(rates.get(Kind.BY_HAND)).average().orElse(0);
        for (Kind kind : kinds) {
            report.detail("rounds_" + kind.label().replace('-', '_'), rates.get(kind));
        }
        report.figure("bare_msgs_per_sec", round(bare), "msg/s");
        report.figure("txbox_msgs_per_sec", round(txbox), "msg/s");
        report.figure("batch_msgs_per_sec", round(batched), "msg/s");
        report.figure("by_hand_msgs_per_sec", round(byHand), "msg/s");
        report.figure("ratio_to_bare", round2(txbox / bare), null);
        report.figure("ratio_to_by_hand", round2(txbox / byHand), null);
        report.figure("by_hand_ratio_to_bare", round2(byHand / bare), null);
        report.figure("batch_speedup", round2(batched / txbox), null);
        report.figure("batch_ratio_to_bare", round2(batched / bare), null);
        report.figure("broken_passes", broken ? 1 : 0, null);
        cpuPerMessage();
        report.target("ratio_to_bare", ">=", 0.90);
        report.target("ratio_to_by_hand", ">=", 0.95);
        report.target("batch_speedup", ">=", 3);
        if (traceSql) {
            report.note("traced run (--trace-sql): database time per statement is in the sql_* figures");
        }
        report.note("bare: " + (broker == Broker.KAFKA ? "kafka-clients, one transaction per record, commitSync "
                + "after each poll" : "amqp-client, one transaction per message, ack after its commit")
                + "; by hand: " + (broker == Broker.KAFKA ? "kafka-clients" : "amqp-client") + " with txbox's receive "
                + "(captured), the same insert and commit" + (replay.chainsCommits() ? " (each COMMIT sent with the next "
                + "receive, as txbox does here)" : "") + ", " + (broker == Broker.KAFKA ? "commitAsync after each poll"
                : "ack after the commit" + (replay.chainsCommits() ? " (one multiple ack per chain)" : ""))
                + "; txbox batch: batchSize " + batch + " (no by-hand batch twin)"
                + (messages < 5_000 ? "; a short run: figures are noisy" : ""));
        html.heading(report.scenario).pre("bare " + round(bare) + " msg/s, by hand " + round(byHand) + " msg/s, txbox "
                + round(txbox) + " msg/s, batch " + round(batched) + " msg/s");
    }

    /**
     * CPU per message of each consumer's measured passes, from its start to its last message:
     * this JVM (of it the JIT compiler and GC threads), the broker, the pool's database sessions
     * (PostgreSQL backends; none on MariaDB, whose sessions are threads). Less sensitive to the
     * machine's load than the rates: where a consumer's cost over another's goes.
     */
    private void cpuPerMessage() {
        Map<String, Map<String, Double>> perKind = new java.util.LinkedHashMap<>();
        StringBuilder table = new StringBuilder(String.format("%-12s %8s %8s %8s %8s %8s%n", "us/msg", "jvm", "jit",
                "gc", "broker", "db"));
        for (Kind kind : kinds) {
            double[] s = cpuSeconds.getOrDefault(kind, new double[5]);
            double per = 1e6 / ((double) messages * rounds);
            Map<String, Double> m = new java.util.LinkedHashMap<>();
            m.put("jvm", Report.round(s[0] * per, 1));
            m.put("jit", Report.round(s[3] * per, 1));
            m.put("gc", Report.round(s[4] * per, 1));
            m.put("broker", Report.round(s[1] * per, 1));
            m.put("db", Report.round(s[2] * per, 1));
            perKind.put(kind.label().replace('-', '_'), m);
            table.append(String.format("%-12s %8.1f %8.1f %8.1f %8.1f %8.1f%n", kind.label(), m.get("jvm"), m.get("jit"),
                    m.get("gc"), m.get("broker"), m.get("db")));
        }
        report.detail("cpu_us_per_msg", perKind);
        log("CPU per message, measured passes (jvm includes jit and gc):%n%s", table);
    }

    private enum Kind {
        BARE, TXBOX, TXBOX_BATCH, BY_HAND;

        String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /** Fills a fresh copy of the backlog, drains it with {@code kind} and returns its rate. */
    private double pass(Kind kind, int n) throws Exception {
        int id = ++passes;
        String name = "consumer-" + kind.label() + "-" + id;
        String source = fill(name, n);
        DataSource ds = env.pool(name, 2, false);
        SqlTiming timing = traceSql ? new SqlTiming() : null;
        if (timing != null) {
            ds = timing.wrap(ds);
        }
        Clock clock = new Clock(n);
        CpuAccount cpu = CpuAccount.start(env, name, brokerProcesses);
        double[] cost;
        try (AutoCloseable consumer = start(kind, name, source, ds, clock)) {
            clock.await(DRAIN_TIMEOUT);
            cost = cpu.since();
        }
        if (n == messages) {
            double[] sum = cpuSeconds.computeIfAbsent(kind, k -> new double[cost.length]);
            for (int i = 0; i < cost.length; i++) {
                sum[i] += cost[i];
            }
        }
        double rate = clock.rate();
        checkExactlyOnce(name, id, n);
        log("%s: %d messages, %.0f msg/s", name, n, rate);
        if (timing != null && n == messages) {
            log("%s database time per statement:%n%s", name, timing.table());
            report.detail("sql_" + kind.label().replace('-', '_'), timing.summary());
        }
        return rate;
    }

    /** Puts {@code n} keyed messages into a new topic or queue; returns its name. */
    private String fill(String name, int n) throws Exception {
        byte[] payload = payload(payloadBytes);
        if (broker == Broker.KAFKA) {
            String topic = env.schema + "-" + name;
            env.createTopic(topic, partitions);
            try (KafkaProducer<byte[], byte[]> producer = KafkaAdmin.fillProducer(env.kafkaBootstrap())) {
                for (int i = 0; i < n; i++) {
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key(i), payload);
                    r.headers().add("idempotency-key", key(i));
                    producer.send(r);
                }
                producer.flush();
            }
            return topic;
        }
        String queue = env.schema + "." + name;
        try (Connection c = env.rabbit().newConnection("bench-fill"); Channel ch = c.createChannel()) {
            ch.queueDeclare(queue, true, false, false, null);
            ch.confirmSelect();
            for (int i = 0; i < n; i++) {
                AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().deliveryMode(2)
                        .headers(Map.of("idempotency-key", new String(key(i), StandardCharsets.UTF_8))).build();
                ch.basicPublish("", queue, props, payload);
            }
            ch.waitForConfirmsOrDie(60_000);
        }
        env.onClose(() -> {
            try (Connection c = env.rabbit().newConnection("bench-cleanup"); Channel ch = c.createChannel()) {
                ch.queueDelete(queue);
                ch.queueDelete(queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX);
            }
        });
        return queue;
    }

    private static byte[] key(int i) {
        return ("m-" + i).getBytes(StandardCharsets.UTF_8);
    }

    private AutoCloseable start(Kind kind, String name, String source, DataSource ds, Clock clock) throws Exception {
        int id = passes;
        if (kind == Kind.BARE) {
            BiConsumer<java.sql.Connection, String> insert = (c, key) -> businessInsert(c, key, id);
            return broker == Broker.KAFKA ? new BareKafka(env.kafkaBootstrap(), source, name, ds, insert, clock)
                    : new BareRabbit(env.rabbit(), source, prefetch, ds, insert, clock);
        }
        if (kind == Kind.BY_HAND) {
            ConsumerByHand byHand = new ConsumerByHand(name, ds, replay, (c, key) -> businessInsert(c, key, id),
                    clock::handled);
            return broker == Broker.KAFKA ? byHand.kafka(env.kafkaBootstrap(), source, maxPollRecords())
                    : byHand.rabbit(env.rabbit(), source, prefetch);
        }
        Handler handler = (tx, m) -> {
            businessInsert(tx, m.key(), id);
            return null;
        };
        Inbox inbox = Inbox.builder(name).tables(env.tables).build();
        int batchSize = kind == Kind.TXBOX_BATCH ? batch : 1;
        io.txbox.inbox.consumer.InboxConsumer consumer;
        if (broker == Broker.KAFKA) {
            consumer = KafkaInboxConsumer.builder(inbox, ds, handler).bootstrapServers(env.kafkaBootstrap())
                    .topics(source).listener(clock).batchSize(batchSize)
                    .consumerProperty("max.poll.records", maxPollRecords()).build();
        } else {
            consumer = RabbitInboxConsumer.builder(inbox, ds, handler).connectionFactory(recovering())
                    .queue(source).prefetch(prefetch).listener(clock).batchSize(batchSize).build();
        }
        consumer.start();
        return consumer;
    }

    /** The records a poll returns at most, for txbox's consumers and the by-hand one. */
    private int maxPollRecords() {
        return Math.max(500, batch);
    }

    private com.rabbitmq.client.ConnectionFactory recovering() {
        com.rabbitmq.client.ConnectionFactory f = env.rabbit();
        f.setAutomaticRecoveryEnabled(true);
        f.setTopologyRecoveryEnabled(true);
        return f;
    }

    private void businessInsert(java.sql.Connection c, String key, int pass) {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + env.businessTable()
                + " (message_key, amount) VALUES (?, ?)")) {
            ps.setString(1, key);
            ps.setLong(2, pass);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private void checkExactlyOnce(String name, int pass, int n) throws SQLException {
        try (java.sql.Connection c = env.adminConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*), count(DISTINCT message_key) FROM "
                        + env.businessTable() + " WHERE amount = " + pass)) {
            rs.next();
            long rows = rs.getLong(1);
            long keys = rs.getLong(2);
            if (rows != n || keys != n) {
                broken = true;
                report.note(name + ": " + keys + " of " + n + " keys took effect, " + (rows - keys) + " twice");
            }
        }
    }

    private static long round(double v) {
        return Math.round(v);
    }

    private static double round2(double v) {
        return Math.round(v * 100) / 100.0;
    }

    /** Counts handled messages; the rate runs from the first to the {@code expected}-th. */
    private static final class Clock implements ConsumerListener {
        private final int expected;
        private final AtomicLong done = new AtomicLong();
        private volatile long firstNanos;
        private volatile long lastNanos;
        private final CountDownLatch reached = new CountDownLatch(1);

        Clock(int expected) {
            this.expected = expected;
        }

        @Override
        public void onOutcome(String consumer, Outcome.Status status, Duration took) {
            if (status == Outcome.Status.PROCESSED || status == Outcome.Status.DUPLICATE) {
                handled(1);
            }
        }

        void handled(int count) {
            long now = System.nanoTime();
            long before = done.getAndAdd(count);
            if (before == 0) {
                firstNanos = now;
            }
            if (before + count >= expected) {
                lastNanos = now;
                reached.countDown();
            }
        }

        void await(Duration timeout) throws InterruptedException {
            if (!reached.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException("only " + done.get() + " of " + expected + " messages handled in "
                        + timeout);
            }
        }

        double rate() {
            long nanos = Math.max(1, lastNanos - firstNanos);
            return expected <= 1 ? expected : (expected - 1) * 1e9 / nanos;
        }
    }

    /** kafka-clients by hand: insert and commit per record, then commitSync after each poll. */
    private static final class BareKafka implements AutoCloseable {
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        BareKafka(String bootstrap, String topic, String group, DataSource ds,
                BiConsumer<java.sql.Connection, String> insert, Clock clock) {
            Properties p = KafkaAdmin.consumerProps(bootstrap, group);
            p.put("max.poll.records", "500");
            thread = new Thread(() -> loop(p, topic, ds, insert, clock), "bench-bare-kafka");
            thread.start();
        }

        private void loop(Properties p, String topic, DataSource ds, BiConsumer<java.sql.Connection, String> insert,
                Clock clock) {
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
                consumer.subscribe(List.of(topic));
                while (running.get()) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        String key = new String(r.headers().lastHeader("idempotency-key").value(),
                                StandardCharsets.UTF_8);
                        inTransaction(ds, insert, key);
                        offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        clock.handled(1);
                    }
                    if (!offsets.isEmpty()) {
                        consumer.commitSync(offsets);
                    }
                }
            }
        }

        @Override
        public void close() throws InterruptedException {
            running.set(false);
            thread.join();
        }
    }

    /** amqp-client by hand: insert and commit per message, then ack it. */
    private static final class BareRabbit implements AutoCloseable {
        private final Connection connection;

        BareRabbit(com.rabbitmq.client.ConnectionFactory factory, String queue, int prefetch, DataSource ds,
                BiConsumer<java.sql.Connection, String> insert, Clock clock) throws Exception {
            connection = factory.newConnection("bench-bare-rabbit");
            Channel ch = connection.createChannel();
            ch.basicQos(prefetch);
            ch.basicConsume(queue, false, new DefaultConsumer(ch) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                        throws java.io.IOException {
                    inTransaction(ds, insert, String.valueOf(props.getHeaders().get("idempotency-key")));
                    ch.basicAck(envelope.getDeliveryTag(), false);
                    clock.handled(1);
                }
            });
        }

        @Override
        public void close() throws Exception {
            connection.close();
        }
    }

    private static void inTransaction(DataSource ds, BiConsumer<java.sql.Connection, String> insert, String key) {
        try (java.sql.Connection c = ds.getConnection()) {
            insert.accept(c, key);
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
