package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PrivateKafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The randomized order checker: many short histories ({@link OrderHistory}), each from a seed
 * ({@link OrderPlan}), each checked by {@link OrderOracle}: nothing committed lost, nothing
 * rolled back published, per-key order of sequential transactions kept, duplicates only where a
 * fault allows them and absorbed by an inbox. Runs on PostgreSQL and MariaDB, to Kafka and
 * RabbitMQ.
 *
 * <p>By default a fixed set of seeds per combination (the build's budget). System properties:
 * {@code txbox.order.seed} replays one seed; {@code txbox.order.minutes} runs new seeds for that
 * long (split over the combinations), starting at {@code txbox.order.seed} if given;
 * {@code txbox.order.db} ({@code postgresql|mariadb}) and {@code txbox.order.broker}
 * ({@code kafka|rabbitmq}) pick one combination; {@code txbox.order.writeMs} sets how long the
 * writers of a history run. {@code faults/run order} wraps these. Progress goes to
 * {@code faults/target/order/progress.log} every 30 s.
 */
class OrderCheckerIT {
    private static final Logger log = LoggerFactory.getLogger(OrderCheckerIT.class);

    /**
     * The build's budget (about two minutes in all): two seeds per combination, picked so that
     * together they cover every fault kind of {@link OrderPlan}: child and in-process relays,
     * stalls, SIGSTOP shorter and longer than the lease, SIGKILL, a graceful restart, session kills
     * on both databases, a broker outage on each broker.
     */
    static final Map<String, long[]> CI_SEEDS = Map.of(
            "POSTGRESQL/kafka", new long[] {7, 39},
            "POSTGRESQL/rabbitmq", new long[] {31, 8},
            "MARIADB/kafka", new long[] {23, 24},
            "MARIADB/rabbitmq", new long[] {19, 12});
    static final long CI_WRITE_MS = 6000;
    static final long LONG_WRITE_MS = 10_000;

    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static PrivateKafkaBroker kafka;
    static OrderProxy rabbitProxy;
    static OrderSpares spares;
    static final AtomicInteger HISTORIES = new AtomicInteger();
    static final AtomicInteger FAILED = new AtomicInteger();
    static final AtomicLong VIOLATIONS = new AtomicLong();
    static ScheduledExecutorService progress;
    static Path progressLog;
    static Path failuresLog;

    @BeforeAll
    static void setUp() throws IOException {
        spares = new OrderSpares(3);
        URI amqp = URI.create(RABBIT.uri());
        rabbitProxy = new OrderProxy(amqp.getHost(), amqp.getPort() < 0 ? 5672 : amqp.getPort());
        progressLog = Path.of("target", "order", "progress.log");
        Files.createDirectories(progressLog.getParent());
        Files.deleteIfExists(progressLog);
        failuresLog = progressLog.resolveSibling("failures.log");
        Files.deleteIfExists(failuresLog);
        long started = System.nanoTime();
        progress = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "order-progress");
            t.setDaemon(true);
            return t;
        });
        progress.scheduleAtFixedRate(() -> progress("running " + (System.nanoTime() - started) / 1_000_000_000 + " s"),
                30, 30, TimeUnit.SECONDS);
    }

    @AfterAll
    static void tearDown() throws Exception {
        spares.close();
        progress.shutdownNow();
        progress("done");
        rabbitProxy.close();
        if (kafka != null) {
            kafka.close();
        }
    }

    static Stream<Arguments> combinations() {
        String db = System.getProperty("txbox.order.db", "");
        String broker = System.getProperty("txbox.order.broker", "");
        List<Arguments> all = new ArrayList<>();
        for (TestDatabase.Kind kind : TestDatabase.Kind.values()) {
            for (String b : List.of("kafka", "rabbitmq")) {
                if ((db.isEmpty() || kind.name().equalsIgnoreCase(db)) && (broker.isEmpty() || b.equals(broker))) {
                    all.add(Arguments.of(kind, b));
                }
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} + {1}")
    @MethodSource("combinations")
    void histories_underStallsSlowCommitsRestartsAndOutages_loseNothingAndKeepPerKeyOrder(TestDatabase.Kind kind,
            String brokerName) throws Exception {
        TestDatabase db = kind == TestDatabase.Kind.POSTGRESQL ? DBS.postgres() : DBS.mariadb();
        OrderHistory.Broker broker = brokerName.equals("kafka") ? OrderHistory.kafka(OrderCheckerIT::kafka)
                : OrderHistory.rabbit(RABBIT, rabbitProxy);
        String seedProperty = System.getProperty("txbox.order.seed");
        String minutes = System.getProperty("txbox.order.minutes");
        long writeMs = Long.getLong("txbox.order.writeMs", minutes == null ? CI_WRITE_MS : LONG_WRITE_MS);
        List<OrderOracle.Verdict> failures = new ArrayList<>();
        if (minutes != null) {
            long combos = combinations().count();
            long until = System.nanoTime() + (long) (Double.parseDouble(minutes) * 60e9 / combos);
            long seed = seedProperty != null ? Long.parseLong(seedProperty) : Instant.now().getEpochSecond() % 1_000_000;
            while (System.nanoTime() < until) {
                run(OrderPlan.of(seed++, writeMs), db, broker, failures);
            }
        } else if (seedProperty != null) {
            run(OrderPlan.of(Long.parseLong(seedProperty), writeMs), db, broker, failures);
        } else {
            for (long seed : CI_SEEDS.get(kind.name() + "/" + brokerName)) {
                run(OrderPlan.of(seed, writeMs), db, broker, failures);
            }
        }
        assertThat(failures).as(() -> failures.size() + " histories broke a promise on " + kind + " + " + brokerName
                + String.join("\n", failures.stream().map(OrderOracle.Verdict::report).toList())).isEmpty();
    }

    private static void run(OrderPlan plan, TestDatabase db, OrderHistory.Broker broker,
            List<OrderOracle.Verdict> failures) throws Exception {
        OrderOracle.Verdict v = new OrderHistory(plan, db, broker, spares).run();
        HISTORIES.incrementAndGet();
        VIOLATIONS.addAndGet(v.violations());
        if (!v.ok()) {
            FAILED.incrementAndGet();
            failures.add(v);
            log.error("history failed: {}", v.report());
            append(failuresLog, v.report() + "\n");
        }
        progress(v.summary());
    }

    private static synchronized PrivateKafkaBroker kafka() {
        if (kafka == null) {
            kafka = KafkaBroker.startPrivate();
        }
        return kafka;
    }

    private static synchronized void progress(String line) {
        String text = Instant.now() + " " + HISTORIES.get() + " histories, " + FAILED.get() + " failed, "
                + VIOLATIONS.get() + " order violations; " + line + "\n";
        System.out.print(text);
        append(progressLog, text);
    }

    private static synchronized void append(Path file, String text) {
        try {
            Files.writeString(file, text, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            log.warn("cannot write {}: {}", file, e.toString());
        }
    }
}
