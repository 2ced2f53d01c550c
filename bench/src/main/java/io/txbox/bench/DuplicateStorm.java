package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.txbox.dynamodb.DynamoStore;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.redis.HybridInbox;
import io.txbox.redis.RedisListener;
import io.txbox.testkit.TestDynamo;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * duplicate-storm: a broker or clients retrying hard. {@code --keys} keys, each delivered
 * {@code --copies} times at once by {@code --senders} threads (the copies of a key are next to
 * each other in the shared delivery list, so they run concurrently). The handler inserts one
 * business row and then spends {@code --work-ms} in its transaction, standing for the rest of
 * the business logic. In the same process, the database inbox alone and the same inbox with the
 * Redis fast path ({@link HybridInbox}) in front each run {@code --rounds} times, in ABBA order
 * (so a drift in the machine's load hits both alike), each run on fresh keys; the figures are
 * over all rounds. An IN_FLIGHT answer (or a failed call) is redelivered after
 * {@code --backoff-ms}, as a broker would: the sender takes other deliveries meanwhile.
 *
 * <p>Figures per side: database transactions per effect (connections borrowed from the pool;
 * each inbox call borrows one per transaction), p99 latency of an inbox call, deliveries per
 * second. {@code tx_reduction} = transactions per effect without / with, {@code throughput_ratio}
 * = with / without; {@code double_effects} and {@code lost} count keys with more than one, or no,
 * business row.
 *
 * <p>With {@code --store dynamodb}, each round also runs a third side: the DynamoDB two-phase store
 * ({@link DynamoStore}) on dynalite started for the run (or {@code --dynamo}), its handler writing
 * the same business row outside any transaction between claim and complete. Its figures are
 * DynamoDB requests per effect and deliveries per second; against a local emulator they only say
 * how the store behaves relative to the others, nothing about DynamoDB's own speed.
 */
final class DuplicateStorm extends Scenario {
    private int senders;
    private int keys;
    private int copies;
    private int backoffMs;
    private int workMs;
    private int poolSize;
    private int rounds;
    private String redisUrl;
    private String store;
    private String dynamoEndpoint;
    private long doubles;
    private long lost;

    @Override
    void configure(Options o) {
        senders = o.intValue("senders", 16, "concurrent senders");
        keys = o.intValue("keys", 1000, "distinct message keys");
        copies = o.intValue("copies", 10, "deliveries of each key, at once");
        backoffMs = o.intValue("backoff-ms", 50, "wait before an IN_FLIGHT answer is redelivered (ms)");
        workMs = o.intValue("work-ms", 2, "time the handler spends in its transaction (ms)");
        poolSize = o.intValue("pool", 16, "database pool size");
        rounds = o.intValue("rounds", 2, "rounds of each side, ABBA order");
        redisUrl = o.string("redis", System.getenv().getOrDefault("TXBOX_BENCH_REDIS", "redis://127.0.0.1:6379"), "Redis URL (or TXBOX_BENCH_REDIS)");
        store = o.string("store", "redis", "stores beside the database inbox: redis, or dynamodb (redis and the"
                + " DynamoDB two-phase store)");
        dynamoEndpoint = o.stringOrNull("dynamo", "DynamoDB endpoint for --store dynamodb; default: start dynalite");
        if (!store.equals("redis") && !store.equals("dynamodb")) {
            throw new Options.UsageException("--store must be redis or dynamodb, but was " + store);
        }
        if (senders < 1 || keys < 1 || copies < 1 || backoffMs < 0 || workMs < 0 || poolSize < 1 || rounds < 1) {
            throw new Options.UsageException("--senders, --keys, --copies, --pool and --rounds must be at least 1,"
                    + " --backoff-ms and --work-ms at least 0");
        }
    }

    @Override
    boolean failedCorrectness() {
        return doubles > 0 || lost > 0;
    }

    /** What one side measured. */
    private record Side(String name, long transactions, long effects, double seconds, Histogram calls,
            Histogram settle, Map<Outcome.Status, Integer> outcomes, Map<RedisListener.Answer, Integer> answers) {
        Side plus(Side o) {
            Histogram c = calls.copy();
            c.add(o.calls);
            Histogram st = settle.copy();
            st.add(o.settle);
            Map<Outcome.Status, Integer> out = new EnumMap<>(Outcome.Status.class);
            out.putAll(outcomes);
            o.outcomes.forEach((k, v) -> out.merge(k, v, Integer::sum));
            return new Side(name, transactions + o.transactions, effects + o.effects, seconds + o.seconds, c, st,
                    out, answers);
        }

        double txPerEffect() {
            return transactions / (double) Math.max(1, effects);
        }

        double deliveriesPerSecond(long deliveries) {
            return deliveries / seconds;
        }
    }

    /** A delivery waiting for its redelivery time. */
    private record Redelivery(InboundMessage message, long firstSent, long dueNanos) implements Delayed {
        Redelivery later(int ms) {
            return new Redelivery(message, firstSent, System.nanoTime() + ms * 1_000_000L);
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(dueNanos, ((Redelivery) o).dueNanos);
        }
    }

    @Override
    void run() throws Exception {
        HikariDataSource pool = env.pool("duplicate-storm", poolSize, true);
        String prefix = "txbox-bench:" + env.tables.schema() + ":";
        long deliveries = (long) keys * copies * rounds;
        Side without = null;
        Side with = null;
        List<String> consumers = new ArrayList<>();
        List<Double> roundRatios = new ArrayList<>();
        Map<RedisListener.Answer, AtomicInteger> answers = new ConcurrentHashMap<>();
        Side dynamo = null;
        Dynamo dynamoRun = store.equals("dynamodb") ? Dynamo.start(dynamoEndpoint) : null;
        try {
            for (int r = 0; r < rounds; r++) {
                // ABBA order, so a drift in the machine's load hits both sides alike
                Side roundWithout = null;
                Side roundWith = null;
                for (int half = 0; half < 2; half++) {
                    boolean redis = (half == 1) == (r % 2 == 0);
                    String consumer = (redis ? "storm-redis-" : "storm-db-") + r;
                    consumers.add(consumer);
                    Inbox database = Inbox.builder(consumer).tables(env.tables).build();
                    if (!redis) {
                        roundWithout = side("database inbox, round " + (r + 1), pool, database, consumer, Map.of());
                        continue;
                    }
                    Map<RedisListener.Answer, AtomicInteger> roundAnswers = new ConcurrentHashMap<>();
                    try (HybridInbox hybrid = HybridInbox.builder(database).redisUrl(redisUrl).keyPrefix(prefix)
                            .listener(new RedisListener() {
                                @Override
                                public void onAnswer(String c, Answer answer) {
                                    roundAnswers.computeIfAbsent(answer, a -> new AtomicInteger()).incrementAndGet();
                                }
                            })
                            .build()) {
                        roundWith = side("with Redis fast path, round " + (r + 1), pool, hybrid, consumer,
                                roundAnswers);
                    }
                    roundAnswers.forEach((a, n) -> answers.computeIfAbsent(a, x -> new AtomicInteger()).addAndGet(n.get()));
                }
                if (dynamoRun != null) {
                    String consumer = "storm-dynamodb-" + r;
                    consumers.add(consumer);
                    Side roundDynamo = dynamoSide("DynamoDB store, round " + (r + 1), pool, dynamoRun, consumer);
                    dynamo = dynamo == null ? roundDynamo : dynamo.plus(roundDynamo);
                }
                roundRatios.add(Report.round(roundWith.seconds() > 0 ? roundWithout.seconds() / roundWith.seconds() : 0, 2));
                without = without == null ? roundWithout : without.plus(roundWithout);
                with = with == null ? roundWith : with.plus(roundWith);
            }
        } finally {
            deleteRedisKeys(prefix);
            if (dynamoRun != null) {
                dynamoRun.close();
            }
        }
        Map<RedisListener.Answer, Integer> answerCounts = new EnumMap<>(RedisListener.Answer.class);
        answers.forEach((a, n) -> answerCounts.put(a, n.get()));
        countEffects(pool, consumers);
        report.detail("throughput_ratio_rounds", roundRatios);
        report.detail("with_redis_answers", answerCounts);

        double txReduction = without.txPerEffect() / with.txPerEffect();
        double throughputRatio = with.deliveriesPerSecond(deliveries) / without.deliveriesPerSecond(deliveries);
        report.figure("without_tx_per_effect", Report.round(without.txPerEffect(), 2), "tx")
                .figure("with_tx_per_effect", Report.round(with.txPerEffect(), 2), "tx")
                .figure("without_p99_ms", InboxOverhead.ms(without.calls().getValueAtPercentile(99)), "ms")
                .figure("with_p99_ms", InboxOverhead.ms(with.calls().getValueAtPercentile(99)), "ms")
                .figure("without_deliveries_per_sec", Report.round(without.deliveriesPerSecond(deliveries), 1), "msg/s")
                .figure("with_deliveries_per_sec", Report.round(with.deliveriesPerSecond(deliveries), 1), "msg/s")
                .figure("tx_reduction", Report.round(txReduction, 2), "x")
                .figure("throughput_ratio", Report.round(throughputRatio, 2), "x")
                .figure("double_effects", doubles, "keys")
                .figure("lost", lost, "keys")
                .detail("without_settle_p99_ms", InboxOverhead.ms(without.settle().getValueAtPercentile(99)))
                .detail("with_settle_p99_ms", InboxOverhead.ms(with.settle().getValueAtPercentile(99)))
                .detail("without_outcomes", without.outcomes())
                .detail("with_outcomes", with.outcomes())
                .target("tx_reduction", ">=", 5)
                .target("throughput_ratio", ">=", 2)
                .target("double_effects", "==", 0);
        if (dynamo != null) {
            report.figure("dynamodb_requests_per_effect", Report.round(dynamo.txPerEffect(), 2), "requests")
                    .figure("dynamodb_p99_ms", InboxOverhead.ms(dynamo.calls().getValueAtPercentile(99)), "ms")
                    .figure("dynamodb_deliveries_per_sec", Report.round(dynamo.deliveriesPerSecond(deliveries), 1),
                            "msg/s")
                    .detail("dynamodb_outcomes", dynamo.outcomes())
                    .detail("dynamodb_server", dynamoRun.description);
            report.note("DynamoDB side against " + dynamoRun.description + ": a local emulator, so its figures only"
                    + " say how the store behaves relative to the database inbox and Redis in this run, not how fast"
                    + " DynamoDB is (a network round trip per request there). double_effects and lost cover all"
                    + " three sides.");
        }
        html.paragraph(String.format("%d senders, %d keys, each delivered %d times at once; handler work %d ms;"
                        + " IN_FLIGHT redelivered after %d ms. Database transactions per effect: %.2f without Redis, %.2f with (%.1fx fewer);"
                        + " deliveries per second: %.0f without, %.0f with (%.2fx).", senders, keys, copies, workMs, backoffMs,
                        without.txPerEffect(), with.txPerEffect(), txReduction, without.deliveriesPerSecond(deliveries),
                        with.deliveriesPerSecond(deliveries), throughputRatio))
                .percentiles("Latency of one inbox call", List.of("database inbox", "with Redis fast path"),
                        List.of(without.calls(), with.calls()), 1000.0, "ms");
    }

    /** Every delivery of every key through {@code inbox}, {@code senders} threads pulling from one list. */
    private Side side(String name, DataSource pool, Inbox inbox, String consumer,
            Map<RedisListener.Answer, AtomicInteger> answers) throws Exception {
        AtomicLong borrowed = new AtomicLong();
        DataSource ds = counting(pool, borrowed);
        Handler handler = (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("INSERT INTO business (message_key, amount) VALUES (?, ?)")) {
                ps.setString(1, m.key());
                ps.setLong(2, 42);
                ps.executeUpdate();
            }
            if (workMs > 0) {
                Thread.sleep(workMs); // the rest of the business logic, inside the transaction
            }
            return ("ok " + m.key()).getBytes(StandardCharsets.UTF_8);
        };
        Storm storm = storm(name, "storm-", consumer, m -> inbox.process(ds, m, handler));
        if (storm.errors() > 0) {
            report.note(name + ": " + storm.errors() + " inbox calls failed and were redelivered");
        }
        long effects = effectsOf(pool, consumer);
        Map<RedisListener.Answer, Integer> a = new EnumMap<>(RedisListener.Answer.class);
        answers.forEach((s, n) -> a.put(s, n.get()));
        Side side = new Side(name, borrowed.get(), effects, storm.seconds(), storm.calls(), storm.settle(),
                storm.outcomes(), a);
        log("%s: %d deliveries in %.2f s (%.0f/s), %d transactions for %d effects (%.2f per effect), call p99 %.2f ms,"
                + " outcomes %s%s", name, storm.deliveries(), storm.seconds(), storm.deliveries() / storm.seconds(),
                side.transactions(), effects, side.txPerEffect(), side.calls().getValueAtPercentile(99) / 1000.0,
                storm.outcomes(), a.isEmpty() ? "" : ", Redis " + a);
        return side;
    }

    /** The DynamoDB server of the run and a client that counts its requests. */
    private static final class Dynamo implements AutoCloseable {
        final AtomicLong requests = new AtomicLong();
        final DynamoDbClient client;
        final String table = "txbox_bench_storm_" + System.currentTimeMillis();
        final String description;
        private final TestDynamo.Server server;

        private Dynamo(URI endpoint, TestDynamo.Server server, String description) {
            this.server = server;
            this.description = description;
            this.client = DynamoDbClient.builder().endpointOverride(endpoint).region(Region.US_EAST_1)
                    .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("bench", "bench")))
                    .httpClient(UrlConnectionHttpClient.create())
                    .overrideConfiguration(o -> o.addExecutionInterceptor(new ExecutionInterceptor() {
                        @Override
                        public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
                            requests.incrementAndGet();
                        }
                    }))
                    .build();
            DynamoStore.createTable(client, table);
        }

        static Dynamo start(String endpoint) {
            if (endpoint != null) {
                return new Dynamo(URI.create(endpoint), null, endpoint);
            }
            TestDynamo.Server server = TestDynamo.startPrivate();
            return new Dynamo(server.endpoint(), server, "dynalite " + TestDynamo.DYNALITE_VERSION + " (in memory, local)");
        }

        @Override
        public void close() {
            client.close();
            if (server != null) {
                server.close();
            }
        }
    }

    /**
     * Every delivery of every key through the DynamoDB two-phase store: claim, then the business
     * row (autocommit) and complete for an ACQUIRED claim; IN_FLIGHT is redelivered after the
     * backoff. {@code transactions} of the side are the DynamoDB requests.
     */
    private Side dynamoSide(String name, DataSource pool, Dynamo dynamo, String consumer) throws Exception {
        DynamoStore store = DynamoStore.builder(consumer).client(dynamo.client).table(dynamo.table).build();
        long requestsBefore = dynamo.requests.get();
        Storm storm = storm(name, "storm-dynamo-", consumer, m -> {
            Outcome.Status status;
            Claim claim = store.claim(m);
            switch (claim.status()) {
                case ACQUIRED -> {
                    try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                            "INSERT INTO business (message_key, amount) VALUES (?, ?)")) {
                        ps.setString(1, m.key());
                        ps.setLong(2, 42);
                        ps.executeUpdate();
                    }
                    if (workMs > 0) {
                        Thread.sleep(workMs); // the rest of the business logic
                    }
                    store.complete(claim, ("ok " + m.key()).getBytes(StandardCharsets.UTF_8));
                    status = Outcome.Status.PROCESSED;
                }
                case DUPLICATE -> status = Outcome.Status.DUPLICATE;
                case DEAD -> status = Outcome.Status.DEAD;
                default -> status = Outcome.Status.IN_FLIGHT;
            }
            return new Outcome(status, null, 0, null, null);
        });
        if (storm.errors() > 0) {
            report.note(name + ": " + storm.errors() + " store calls failed and were redelivered");
        }
        long effects = effectsOf(pool, consumer);
        Side side = new Side(name, dynamo.requests.get() - requestsBefore, effects, storm.seconds(), storm.calls(),
                storm.settle(), storm.outcomes(), Map.of());
        log("%s: %d deliveries in %.2f s (%.0f/s), %d DynamoDB requests for %d effects (%.2f per effect), call p99"
                + " %.2f ms, outcomes %s", name, storm.deliveries(), storm.seconds(),
                storm.deliveries() / storm.seconds(), side.transactions(), effects, side.txPerEffect(),
                side.calls().getValueAtPercentile(99) / 1000.0, storm.outcomes());
        return side;
    }

    /** One delivery through a side; a thrown failure is redelivered after the backoff. */
    @FunctionalInterface
    private interface Delivery {
        Outcome deliver(InboundMessage message) throws java.sql.SQLException, InterruptedException;
    }

    /** What one side's storm measured: its length, call and settle latencies, outcomes and failed calls. */
    private record Storm(int deliveries, double seconds, Histogram calls, Histogram settle,
            Map<Outcome.Status, Integer> outcomes, long errors) {}

    /**
     * Every delivery of every key of {@code consumer} through {@code delivery}, {@code senders}
     * threads pulling from one list. A call that fails, or whose outcome is not final, is
     * redelivered after the backoff, as a broker redelivers.
     */
    private Storm storm(String name, String threadPrefix, String consumer, Delivery delivery)
            throws InterruptedException {
        int total = keys * copies;
        AtomicInteger next = new AtomicInteger();
        AtomicInteger settled = new AtomicInteger();
        DelayQueue<Redelivery> redeliveries = new DelayQueue<>();
        Recorder calls = new Recorder(3);
        Recorder settle = new Recorder(3);
        Map<Outcome.Status, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        AtomicLong errors = new AtomicLong();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < senders; t++) {
            Thread th = new Thread(() -> {
                try {
                    start.await();
                    while (settled.get() < total) {
                        // A due redelivery first, else the next fresh delivery, else wait for a redelivery.
                        Redelivery d = redeliveries.poll();
                        if (d == null) {
                            int i = next.getAndIncrement();
                            if (i < total) {
                                int k = i / copies;
                                d = new Redelivery(InboundMessage.of(consumer + "-" + k,
                                        ("order " + k).getBytes(StandardCharsets.UTF_8)), System.nanoTime(), 0);
                            } else {
                                d = redeliveries.poll(1, TimeUnit.MILLISECONDS);
                                if (d == null) {
                                    continue;
                                }
                            }
                        }
                        long t0 = System.nanoTime();
                        Outcome o;
                        try {
                            o = delivery.deliver(d.message());
                        } catch (RuntimeException | java.sql.SQLException e) {
                            if (errors.incrementAndGet() <= 3) {
                                System.err.println(name + ": delivery failed, redelivering: " + e);
                            }
                            redeliveries.add(d.later(backoffMs));
                            continue;
                        }
                        long t1 = System.nanoTime();
                        calls.recordValue((t1 - t0) / 1000);
                        outcomes.computeIfAbsent(o.status(), s -> new AtomicInteger()).incrementAndGet();
                        if (o.isFinal()) {
                            settle.recordValue((t1 - d.firstSent()) / 1000);
                            settled.incrementAndGet();
                        } else {
                            // as a broker redelivers: later, while this sender takes other work
                            redeliveries.add(d.later(backoffMs));
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, threadPrefix + t);
            th.start();
            threads.add(th);
        }
        long t0 = System.nanoTime();
        start.countDown();
        for (Thread th : threads) {
            th.join();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<Outcome.Status, Integer> o = new EnumMap<>(Outcome.Status.class);
        outcomes.forEach((st, n) -> o.put(st, n.get()));
        return new Storm(total, seconds, calls.getIntervalHistogram(), settle.getIntervalHistogram(), o, errors.get());
    }

    private long effectsOf(DataSource pool, String consumer) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM business WHERE message_key LIKE ?")) {
            ps.setString(1, consumer + "-%");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Keys of both sides with more than one business row (double effects) or none (lost). */
    private void countEffects(DataSource pool, List<String> consumers) throws Exception {
        Map<String, Long> perKey = new LinkedHashMap<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT message_key, count(*) FROM business GROUP BY message_key")) {
            while (rs.next()) {
                perKey.put(rs.getString(1), rs.getLong(2));
            }
        }
        doubles = perKey.values().stream().filter(n -> n > 1).count();
        lost = 0;
        for (String consumer : consumers) {
            for (int k = 0; k < keys; k++) {
                if (!perKey.containsKey(consumer + "-" + k)) {
                    lost++;
                }
            }
        }
    }

    private void deleteRedisKeys(String prefix) {
        RedisClient client = RedisClient.create(redisUrl);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> redis = c.sync();
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page = redis.scan(cursor, ScanArgs.Builder.matches(prefix + "*").limit(1000));
                if (!page.getKeys().isEmpty()) {
                    redis.unlink(page.getKeys().toArray(String[]::new));
                }
                cursor = page;
            } while (!cursor.isFinished());
        } catch (RuntimeException e) {
            report.note("could not delete the run's Redis keys under " + prefix + ": " + e);
        } finally {
            client.shutdown();
        }
    }

    /** Counts the connections borrowed: every inbox call borrows one per database transaction. */
    private static DataSource counting(DataSource ds, AtomicLong borrowed) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        borrowed.incrementAndGet();
                    }
                    try {
                        return method.invoke(ds, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
