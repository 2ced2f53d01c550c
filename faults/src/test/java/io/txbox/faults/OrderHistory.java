package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * One randomized history of the order checker: writers of several keys, each key written by
 * strictly sequential transactions ({@code key:seq} payloads) with random think times, slow
 * commits, delays and rollbacks, next to writers of many other keys, and a poison key whose second
 * row every relay refuses for good (it parks the key until the history skips it); the relays of an {@link
 * OrderPlan} under its faults; then everything drained, read back from the broker in arrival
 * order and handed to {@link OrderOracle}.
 */
final class OrderHistory {
    /** A broker the history publishes to: where the relays reach it, and how a fault takes it away. */
    interface Broker {
        String name();

        /** The address relays use (through a proxy for RabbitMQ). */
        String relayAddress();

        /**
         * Creates this history's topic or exchange (and audit queue) and returns its name; a
         * broker without publish times of its own starts recording arrivals on {@code log}'s clock.
         */
        String createTarget(String hint, OrderLog log) throws Exception;

        /** Every record published to {@code target}, in arrival order; called once the relays are closed. */
        List<OrderOracle.Received> readAll(String target, java.util.Set<String> expected, OrderLog log) throws Exception;

        OrderFleet.Outage outage();
    }

    private static final int FILLER_THREADS = 2;
    private static final int FILLER_KEYS = 24;

    private final OrderPlan plan;
    private final TestDatabase db;
    private final Broker broker;
    private final String combo;
    private final String id;
    private final OrderLog log;
    private final OrderSpares spares;

    OrderHistory(OrderPlan plan, TestDatabase db, Broker broker, OrderSpares spares) {
        this.spares = spares;
        this.plan = plan;
        this.db = db;
        this.broker = broker;
        this.combo = db.kind() + " + " + broker.name();
        this.id = "o" + Long.toHexString(System.nanoTime() & 0xfffffff);
        this.log = new OrderLog(id + " seed " + plan.seed());
    }

    OrderOracle.Verdict run() throws Exception {
        String schema = db.newSchema("order");
        TxboxTables tables = TxboxTables.inSchema(schema);
        try (HikariDataSource pool = Pools.pool(db.jdbcUrl(schema), db.user(), "order-writer-" + id, 16)) {
            TxboxMigrations.migrate(pool, tables);
            if (db.kind() == TestDatabase.Kind.MARIADB) {
                grantRelayUser(pool, schema);
            }
            String target = broker.createTarget("order-" + plan.seed() + "-" + id, log);
            log.event(combo + ", " + plan);
            List<OrderOracle.Received> received;
            OrderOracle.Parking parking;
            try (OrderFleet fleet = new OrderFleet(log, id, brokerArg(), broker.relayAddress(), target, db, schema, pool,
                    spares)) {
                plan.relays().forEach(r -> fleet.add(r.child(), r.batchSize()));
                fleet.startAll();
                write(pool, tables, fleet);
                log.event("writes done; settling");
                fleet.settle();
                parking = release(pool, tables);
                String outbox = db.qualified(schema, tables.outboxTable());
                try {
                    await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
                            .until(() -> count(pool, outbox) == 0);
                } catch (org.awaitility.core.ConditionTimeoutException e) {
                    log.event("outbox not drained after 90 s: " + count(pool, outbox) + " rows left");
                }
                log.event("outbox drained; closing the relays");
                fleet.close();
            }
            java.util.Set<String> expected = new java.util.HashSet<>();
            log.writes().stream().filter(w -> w.outcome() == OrderLog.Outcome.COMMITTED)
                    .forEach(w -> expected.add(w.stepKey()));
            received = broker.readAll(target, expected, log);
            log.event("read back " + received.size() + " records");
            long dead = count(pool, db.qualified(schema, tables.outboxDeadTable()));
            long left = count(pool, db.qualified(schema, tables.outboxTable()));
            return OrderOracle.check(plan, combo, log, received, dead, left, pool, tables, parking);
        }
    }

    private String brokerArg() {
        return broker.name().toLowerCase();
    }

    /** The relays log in as their own user on MariaDB, so a session kill finds only theirs. */
    private static void grantRelayUser(HikariDataSource pool, String schema) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE USER IF NOT EXISTS '" + OrderFleet.MARIADB_RELAY_USER + "'@'%'");
            s.execute("GRANT ALL PRIVILEGES ON `" + schema + "`.* TO '" + OrderFleet.MARIADB_RELAY_USER + "'@'%'");
        }
    }

    /** The poison key: one sequential writer, its {@link #POISON_SEQ}th row refused for good by every relay. */
    static final String POISON_KEY = "pz";
    static final long POISON_SEQ = 2;

    /**
     * Waits until the poison row parked its key, then skips it as an operator would; the key's
     * later rows waited in the outbox until then, and go out now. Returns what the oracle checks:
     * none of them may reach the broker before the release.
     */
    private OrderOracle.Parking release(HikariDataSource pool, TxboxTables tables) {
        io.txbox.relay.DeadLetters dead = io.txbox.relay.DeadLetters.of(pool, tables);
        String poisonStep = StepKey.of(POISON_KEY + "-" + POISON_SEQ, "order").value();
        boolean written = log.writes().stream().anyMatch(w -> w.stepKey().equals(poisonStep));
        if (!written) {
            return new OrderOracle.Parking(POISON_KEY, POISON_SEQ, poisonStep, Long.MAX_VALUE);
        }
        try {
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                    .until(() -> dead.parkedKeys(10).stream().anyMatch(k -> k.routingKey().equals(POISON_KEY)));
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            log.event("poison key " + POISON_KEY + " not parked after 60 s");
        }
        long releasedAt = log.now();
        boolean skipped = dead.skipKey(OrderRelayChild.DESTINATION, POISON_KEY);
        log.event("poison key " + POISON_KEY + (skipped ? " released (dead row skipped)" : " was not parked"));
        return new OrderOracle.Parking(POISON_KEY, POISON_SEQ, poisonStep, releasedAt);
    }

    /** Runs the writers for the plan's time while the faults land; returns when every writer is done. */
    private void write(HikariDataSource pool, TxboxTables tables, OrderFleet fleet) throws Exception {
        Outbox outbox = Outbox.builder().tables(tables).build();
        String idQuery = "SELECT id FROM " + db.qualified(tables.schema(), tables.outboxTable()) + " WHERE step_key = ?";
        long[] deadline = {0};
        List<Thread> writers = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int k = 0; k <= plan.mainKeys() + FILLER_THREADS; k++) {
            boolean filler = k >= plan.mainKeys() && k < plan.mainKeys() + FILLER_THREADS;
            List<String> keys = new ArrayList<>();
            if (k == plan.mainKeys() + FILLER_THREADS) {
                keys.add(POISON_KEY);
            } else if (filler) {
                for (int f = 0; f < FILLER_KEYS; f++) {
                    keys.add("f" + (k - plan.mainKeys()) + "-" + f);
                }
            } else {
                keys.add("k" + k);
            }
            Random r = new Random(plan.seed() * 31 + k);
            Thread t = new Thread(() -> {
                try {
                    writeKeys(pool, outbox, idQuery, keys, filler, r, deadline[0]);
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            }, "order-writer-" + k);
            writers.add(t);
        }
        ScheduledThreadPoolExecutor faults = new ScheduledThreadPoolExecutor(3, r -> {
            Thread t = new Thread(r, "order-faults");
            t.setDaemon(true);
            return t;
        });
        // faults not begun when the writers end are dropped; settle() undoes the ones that ran
        faults.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        log.zero();
        long start = log.now();
        deadline[0] = log.now() + plan.writeMs();
        writers.forEach(Thread::start);
        Random fr = new Random(plan.seed() ^ 0x5eed);
        for (OrderPlan.Fault f : plan.faults()) {
            long salt = fr.nextLong();
            faults.schedule(() -> inject(f, fleet, faults, new Random(salt)), f.atMs(), TimeUnit.MILLISECONDS);
        }
        for (Thread t : writers) {
            t.join();
        }
        faults.shutdown();
        if (!faults.awaitTermination(60, TimeUnit.SECONDS)) {
            log.event("a fault was still running 60 s after the writes");
        }
        if (plan.brokerOutage()) {
            broker.outage().up();
        }
        log.event("writers ran " + (log.now() - start) + " ms");
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a writer failed: " + failures.get(0), failures.get(0));
        }
    }

    private void inject(OrderPlan.Fault f, OrderFleet fleet, ScheduledExecutorService faults, Random r) {
        try {
            OrderFleet.Slot slot = fleet.slot(f.slot());
            switch (f.kind()) {
                case STOP_SHORT, STOP_LONG -> {
                    if (slot.stop()) {
                        faults.schedule(() -> quietly(() -> {
                            slot.cont();
                            return null;
                        }), f.durationMs(), TimeUnit.MILLISECONDS);
                    }
                }
                case KILL -> {
                    if (slot.kill()) {
                        faults.schedule(() -> quietly(() -> {
                            slot.start();
                            return null;
                        }), f.durationMs(), TimeUnit.MILLISECONDS);
                    }
                }
                case RESTART -> slot.restart();
                case TERMINATE_SESSION -> fleet.terminateSession(r);
                case STALL -> slot.stall(Duration.ofMillis(f.durationMs()));
                case BROKER_OUTAGE -> {
                    log.event(broker.name() + " down");
                    broker.outage().down();
                    faults.schedule(() -> quietly(() -> {
                        broker.outage().up();
                        log.event(broker.name() + " up");
                        return null;
                    }), f.durationMs(), TimeUnit.MILLISECONDS);
                }
                default -> throw new IllegalStateException(f.toString());
            }
        } catch (Exception e) {
            log.event("fault " + f + " failed: " + e);
        }
    }

    private interface Step {
        Object run() throws Exception;
    }

    private void quietly(Step step) {
        try {
            step.run();
        } catch (Exception e) {
            log.event("fault step failed: " + e);
        }
    }

    /**
     * One writer: strictly sequential transactions on its keys until {@code deadline}. A main
     * key's transaction writes one row and sometimes stays open over a second after its insert
     * (a slow commit), is delayed or rolls back; a filler transaction writes one to three rows of
     * its keys and commits at once.
     */
    private void writeKeys(HikariDataSource pool, Outbox outbox, String idQuery, List<String> keys, boolean filler,
            Random r, long deadline) throws Exception {
        Map<String, Long> seqs = new HashMap<>();
        while (log.now() < deadline) {
            hold(filler ? 10 + r.nextInt(50) : r.nextInt(10) < 6 ? r.nextInt(30) : 30 + r.nextInt(220));
            int rows = filler ? 1 + r.nextInt(3) : 1;
            List<String> txKeys = new ArrayList<>(keys);
            java.util.Collections.shuffle(txKeys, r);
            txKeys = txKeys.subList(0, rows);
            long heldMs;
            int shape = r.nextInt(100);
            if (filler) {
                heldMs = r.nextInt(20);
            } else if (shape < 50) {
                heldMs = r.nextInt(30);
            } else if (shape < 65) {
                heldMs = 100 + r.nextInt(700);
            } else {
                heldMs = 1100 + r.nextInt(1500); // past the 1 s some claims trust rows to commit within
            }
            boolean poisonKey = keys.get(0).equals(POISON_KEY);
            boolean rollback = !poisonKey && r.nextInt(100) < (filler ? 4 : 10);
            long delayMs = !filler && !poisonKey && r.nextInt(100) < 8 ? 500 + r.nextInt(2000) : 0;
            List<Object[]> sent = new ArrayList<>();
            long begin = log.now();
            long insert;
            OrderLog.Outcome outcome;
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                for (String key : txKeys) {
                    long seq = seqs.merge(key, 1L, Long::sum);
                    StepKey step = StepKey.of(key + "-" + seq, "order");
                    OutboxMessage.Builder m = OutboxMessage.builder(step, OrderRelayChild.DESTINATION).routingKey(key)
                            .payload(key + ":" + seq);
                    if (delayMs > 0) {
                        m.delay(Duration.ofMillis(delayMs));
                    }
                    if (poisonKey && seq == POISON_SEQ) {
                        m.header(OrderRelayChild.POISON_HEADER, "1");
                    }
                    outbox.send(c, m.build());
                    long id;
                    try (PreparedStatement ps = c.prepareStatement(idQuery)) {
                        ps.setString(1, step.value());
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            id = rs.getLong(1);
                        }
                    }
                    sent.add(new Object[] {step.value(), key, seq, id});
                }
                insert = log.now();
                hold(heldMs);
                if (rollback) {
                    c.rollback();
                    outcome = OrderLog.Outcome.ROLLED_BACK;
                } else {
                    try {
                        c.commit();
                        outcome = OrderLog.Outcome.COMMITTED;
                    } catch (SQLException e) {
                        outcome = OrderLog.Outcome.UNKNOWN;
                    }
                }
            }
            long end = log.now();
            for (Object[] s : sent) {
                log.write(new OrderLog.Write((String) s[0], (String) s[1], (Long) s[2], (Long) s[3], delayMs, begin,
                        insert, end, outcome));
            }
        }
    }

    /** A writer's think time or an open transaction's hold: time passing on purpose, not a wait for a condition. */
    private static void hold(long ms) {
        long until = System.nanoTime() + ms * 1_000_000;
        for (long left = ms * 1_000_000; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    private static long count(HikariDataSource pool, String table) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Kafka: a private broker the outage kills and restarts; records read from every partition up to the end. */
    static Broker kafka(Supplier<io.txbox.testkit.PrivateKafkaBroker> brokerSupplier) {
        return new Broker() {
            @Override
            public String name() {
                return "Kafka";
            }

            @Override
            public String relayAddress() {
                return brokerSupplier.get().bootstrapServers();
            }

            @Override
            public String createTarget(String hint, OrderLog log) {
                io.txbox.testkit.PrivateKafkaBroker b = brokerSupplier.get();
                String topic = b.uniqueTopic(hint);
                b.createTopic(topic, 4);
                return topic;
            }

            @Override
            public List<OrderOracle.Received> readAll(String topic, java.util.Set<String> expected, OrderLog log) {
                String bootstrap = brokerSupplier.get().bootstrapServers();
                List<OrderOracle.Received> out = new ArrayList<>();
                try (KafkaConsumer<byte[], byte[]> c = Topics.reader(bootstrap)) {
                    List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                            .map(p -> new TopicPartition(topic, p.partition())).toList();
                    c.assign(parts);
                    c.seekToBeginning(parts);
                    Map<TopicPartition, Long> ends = c.endOffsets(parts, Duration.ofSeconds(30));
                    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(1)).until(() -> {
                        for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(200))) {
                            Header h = rec.headers().lastHeader(OutboxMessage.IDEMPOTENCY_KEY_HEADER);
                            out.add(new OrderOracle.Received(out.size(),
                                    h == null ? null : new String(h.value(), StandardCharsets.UTF_8),
                                    new String(rec.value(), StandardCharsets.UTF_8), log.sinceStart(rec.timestamp()),
                                    "p" + rec.partition() + "@" + rec.offset()));
                        }
                        return parts.stream().allMatch(tp -> c.position(tp) >= ends.get(tp));
                    });
                }
                return out;
            }

            @Override
            public OrderFleet.Outage outage() {
                return new OrderFleet.Outage() {
                    @Override
                    public void down() {
                        brokerSupplier.get().kill();
                    }

                    @Override
                    public void up() {
                        if (!brokerSupplier.get().isRunning()) {
                            brokerSupplier.get().restart();
                        }
                    }
                };
            }
        };
    }

    /** RabbitMQ: the shared node behind an {@link OrderProxy} the outage takes down; an audit queue drained back. */
    static Broker rabbit(io.txbox.testkit.TestRabbit rabbit, OrderProxy proxy) {
        String address = rabbit.uri().replaceFirst("^(amqps?://(?:[^@/]*@)?)[^/:]+(?::\\d+)?", "$1127.0.0.1:" + proxy.port())
                .replaceAll("/$", "");
        Map<String, Object[]> consumers = new java.util.concurrent.ConcurrentHashMap<>();
        return new Broker() {
            @Override
            public String name() {
                return "RabbitMQ";
            }

            @Override
            public String relayAddress() {
                return address;
            }

            @Override
            public String createTarget(String hint, OrderLog log) throws Exception {
                String exchange = rabbit.name(hint + "-x");
                String queue = rabbit.name(hint + "-q");
                com.rabbitmq.client.Connection c = rabbit.newConnection();
                Queues.declare(c, exchange, queue);
                // consumed as it arrives, so each record carries its arrival time for a failure's report
                List<OrderOracle.Received> out = java.util.Collections.synchronizedList(new ArrayList<>());
                Channel ch = c.createChannel();
                ch.basicConsume(queue, true, (tag, d) -> {
                    Object k = d.getProperties().getHeaders() == null ? null
                            : d.getProperties().getHeaders().get(RabbitPublisher.IDEMPOTENCY_HEADER);
                    synchronized (out) {
                        out.add(new OrderOracle.Received(out.size(), k == null ? null : k.toString(),
                                new String(d.getBody(), StandardCharsets.UTF_8), log.now(), "#" + out.size()));
                    }
                }, tag -> { });
                consumers.put(exchange, new Object[] {c, queue, out});
                return exchange;
            }

            @Override
            public List<OrderOracle.Received> readAll(String exchange, java.util.Set<String> expected, OrderLog log)
                    throws Exception {
                Object[] consumer = consumers.remove(exchange);
                com.rabbitmq.client.Connection c = (com.rabbitmq.client.Connection) consumer[0];
                @SuppressWarnings("unchecked")
                List<OrderOracle.Received> out = (List<OrderOracle.Received>) consumer[2];
                int[] last = {-1};
                try (c; Channel ch = c.createChannel()) {
                    // every committed record seen, the queue empty and nothing new for a few polls
                    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
                        java.util.Set<String> seen = new java.util.HashSet<>();
                        int size;
                        synchronized (out) {
                            out.forEach(r -> seen.add(r.stepKey()));
                            size = out.size();
                        }
                        boolean settled = size == last[0] && seen.containsAll(expected)
                                && ch.queueDeclarePassive((String) consumer[1]).getMessageCount() == 0;
                        last[0] = size;
                        return settled;
                    });
                } catch (org.awaitility.core.ConditionTimeoutException e) {
                    // the oracle names what is missing
                }
                synchronized (out) {
                    return List.copyOf(out);
                }
            }

            @Override
            public OrderFleet.Outage outage() {
                return new OrderFleet.Outage() {
                    @Override
                    public void down() {
                        proxy.down();
                    }

                    @Override
                    public void up() {
                        proxy.up();
                    }
                };
            }
        };
    }
}
