package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import org.HdrHistogram.Histogram;

/**
 * cdc-kafka: the polling relay against change data capture, on the same backlog and at the same
 * steady rate, in one run. The writers are relay-kafka's concurrent mode ({@code --writers}
 * threads, {@code --tx-size} rows per transaction), each routing key written by one thread so that
 * its order is defined. The polling path runs an in-process relay ({@link RelayRun}'s settings) on
 * the plain outbox; the CDC path runs the outbox in CDC mode, read by Debezium's embedded engine
 * with txbox's router in a JVM of its own ({@link EngineChild}: PostgreSQL's connector with
 * pgoutput, or MariaDB's with its binlog). Each of {@code --rounds} runs both paths, the order
 * swapped every other round, and each path runs two phases after an unmeasured warm-up:
 *
 * <ul>
 *   <li><b>steady</b> (with {@code --rate} above 0): {@code --steady-rows} messages paced to {@code
 *       --rate} while the reader runs: each message's end-to-end latency, from the time its
 *       transaction was due by the pace to its arrival at a consumer, and the database CPU per
 *       1,000 messages (writers and reader together);
 *   <li><b>backlog</b>: with the reader stopped (the relay closed; the engine stopped with its slot
 *       and offsets kept), {@code --rows} messages written as fast as the writers can, then the
 *       reader started: the drain rate, from the first record's broker timestamp to the last
 *       one's, and the database CPU per 1,000 messages of writing the backlog and of draining it.
 * </ul>
 *
 * <p>Database CPU on PostgreSQL: the writers' sessions, and the relay's sessions or the slot's
 * walsender (over its whole life, start-up included). On MariaDB, whose sessions are threads of
 * the server, the server process's CPU over the phase. Figures: {@code cdc_to_poll} (drain rates),
 * {@code db_cpu_ratio} (CDC / polling at the steady rate), {@code backlog_db_cpu_ratio}, latency
 * percentiles. The oracle: every step key arrives, in per-key order ({@link KeyOrder}), and
 * duplicates are counted.
 */
final class CdcThroughput extends Scenario {
    /** Routing keys: relay-kafka's 1,000, so that rows spread over every lane and partition. */
    private static final int KEYS = 1000;
    /** How long the reader waits for a new step key before it gives up on the rest. */
    private static final Duration IDLE = Duration.ofSeconds(60);

    private long rows;
    private long steadyRows;
    private int payloadSize;
    private int writers;
    private int txSize;
    private double rate;
    private long warmupRows;
    private int rounds;
    private RelayRun relayRun;
    private long lost = -1;
    private long violations = -1;
    private HikariDataSource writerPool;
    private HikariDataSource relayPool;
    private byte[] payload;
    private String base;
    /** The first row number not used yet: every pass and warm-up writes rows of its own. */
    private long nextRow;

    /**
     * One phase of one path: its messages per second (backlog: the drain's; steady: the arrivals'),
     * what the reader found, the CPU seconds of the database while writing and while reading (the
     * steady phase: writers and reader at once, all in {@code dbWrite} on MariaDB), and the
     * latencies (steady phase).
     */
    private record Pass(boolean cdc, boolean steady, long messages, double msgsPerSec, double writeRate,
            KafkaAdmin.ReadBack back, KeyOrder order, double dbWrite, double dbRead, Histogram latency) {
        double dbCpu() {
            return dbWrite + dbRead;
        }

        String path() {
            return cdc ? "Debezium" : "polling relay";
        }
    }

    @Override
    void configure(Options o) {
        rows = o.longValue("rows", 100_000, "messages in each backlog");
        rate = o.doubleValue("rate", 1000, "messages per second in the steady phase; 0 = no steady phase");
        steadyRows = o.longValue("steady-rows", 30_000, "messages in each steady phase");
        payloadSize = o.intValue("payload", 400, "payload bytes per message");
        writers = o.intValue("writers", 4, "writer threads (each owns its routing keys; must divide " + KEYS + ")");
        if (writers < 1 || KEYS % writers != 0) {
            throw new Options.UsageException("--writers must divide " + KEYS + " (each owns its keys), but was " + writers);
        }
        txSize = o.intValue("tx-size", 10, "messages per writer transaction");
        warmupRows = o.longValue("warmup-rows", 20_000, "messages through each path's reader before its phases");
        rounds = o.intValue("rounds", 2, "rounds of both paths (every other round CDC first)");
        if (rounds < 1) {
            throw new Options.UsageException("--rounds must be at least 1, but was " + rounds);
        }
        if (rows < 1 || (rate > 0 && steadyRows < 1)) {
            throw new Options.UsageException("--rows and --steady-rows must be at least 1, but were " + rows + " and "
                    + steadyRows + " (--rate 0 turns the steady phase off)");
        }
        if (rate < 0) {
            throw new Options.UsageException("--rate must be 0 (no steady phase) or more, but was " + rate);
        }
        relayRun = new RelayRun(o);
    }

    @Override
    boolean failedCorrectness() {
        return lost != 0 || violations != 0;
    }

    @Override
    void run() throws Exception {
        writerPool = env.pool("writers", writers);
        relayPool = env.pool("relay", relayRun.workers + 1);
        payload = payload(payloadSize);
        base = Long.toString(ThreadLocalRandom.current().nextLong(1L << 30, 1L << 31), 36);
        log("%d rounds on %s: per path a backlog of %,d messages%s; %d writers x %d per transaction, %d B each", rounds,
                env.mariadb ? "MariaDB" : "PostgreSQL", rows,
                rate > 0 ? String.format(" and %,d messages paced to %,.0f/s", steadyRows, rate) : "", writers, txSize,
                payloadSize);
        List<Pass> passes = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            boolean cdcFirst = round % 2 == 1;
            for (boolean cdc : new boolean[] {cdcFirst, !cdcFirst}) {
                passes.addAll(cdc ? cdcPath(round) : pollPath(round));
            }
        }
        long left = RelayRun.outboxRows(env);
        lost = left;
        violations = 0;
        long pollDuplicates = 0;
        long cdcDuplicates = 0;
        for (Pass p : passes) {
            lost += p.back().lost();
            violations += p.order().violationCount();
            pollDuplicates += p.cdc() ? 0 : p.back().duplicates();
            cdcDuplicates += p.cdc() ? p.back().duplicates() : 0;
        }
        double pollRate = rate(passes, false);
        double cdcRate = rate(passes, true);
        List<Double> roundRatios = new ArrayList<>();
        List<Pass> drains = passes.stream().filter(p -> !p.steady()).toList();
        for (int i = 1; i < drains.size(); i += 2) {
            Pass c = drains.get(i).cdc() ? drains.get(i) : drains.get(i - 1);
            Pass q = drains.get(i).cdc() ? drains.get(i - 1) : drains.get(i);
            roundRatios.add(Report.round(c.msgsPerSec() / q.msgsPerSec(), 3));
        }
        double pollBacklog = msPer1000(passes, false, false, Pass::dbCpu);
        double cdcBacklog = msPer1000(passes, true, false, Pass::dbCpu);
        log("backlog: drain CDC / polling = %.3f (rounds: %s); database CPU per 1,000 messages: polling %.1f ms, CDC %.1f ms",
                cdcRate / pollRate, roundRatios, pollBacklog, cdcBacklog);
        report.figure("cdc_msgs_per_sec", Report.round(cdcRate, 0), "msg/s")
                .figure("poll_msgs_per_sec", Report.round(pollRate, 0), "msg/s")
                .figure("cdc_to_poll", Report.round(cdcRate / pollRate, 3), "")
                .detail("cdc_to_poll_by_round", roundRatios)
                .figure("cdc_write_rows_per_sec", Report.round(mean(drains, true, Pass::writeRate), 0), "rows/s")
                .figure("poll_write_rows_per_sec", Report.round(mean(drains, false, Pass::writeRate), 0), "rows/s")
                .figure("backlog_cdc_db_cpu_ms_per_1000", Report.round(cdcBacklog, 1), "ms")
                .figure("backlog_poll_db_cpu_ms_per_1000", Report.round(pollBacklog, 1), "ms")
                .figure("backlog_cdc_db_cpu_write_ms_per_1000", Report.round(msPer1000(passes, true, false, Pass::dbWrite), 1), "ms")
                .figure("backlog_poll_db_cpu_write_ms_per_1000", Report.round(msPer1000(passes, false, false, Pass::dbWrite), 1), "ms")
                .figure("backlog_cdc_db_cpu_drain_ms_per_1000", Report.round(msPer1000(passes, true, false, Pass::dbRead), 1), "ms")
                .figure("backlog_poll_db_cpu_drain_ms_per_1000", Report.round(msPer1000(passes, false, false, Pass::dbRead), 1), "ms")
                .figure("backlog_db_cpu_ratio", Report.round(ratio(cdcBacklog, pollBacklog), 3), "")
                .figure("backlog_drain_db_cpu_ratio", Report.round(ratio(msPer1000(passes, true, false, Pass::dbRead),
                        msPer1000(passes, false, false, Pass::dbRead)), 3), "");
        if (rate > 0) {
            double pollSteady = msPer1000(passes, false, true, Pass::dbCpu);
            double cdcSteady = msPer1000(passes, true, true, Pass::dbCpu);
            report.figure("steady_cdc_db_cpu_ms_per_1000", Report.round(cdcSteady, 1), "ms")
                    .figure("steady_poll_db_cpu_ms_per_1000", Report.round(pollSteady, 1), "ms");
            if (!env.mariadb) {
                report.figure("steady_cdc_db_cpu_writers_ms_per_1000", Report.round(msPer1000(passes, true, true, Pass::dbWrite), 1), "ms")
                        .figure("steady_poll_db_cpu_writers_ms_per_1000", Report.round(msPer1000(passes, false, true, Pass::dbWrite), 1), "ms")
                        .figure("steady_cdc_db_cpu_walsender_ms_per_1000", Report.round(msPer1000(passes, true, true, Pass::dbRead), 1), "ms")
                        .figure("steady_poll_db_cpu_relay_ms_per_1000", Report.round(msPer1000(passes, false, true, Pass::dbRead), 1), "ms");
            }
            report.figure("db_cpu_ratio", Report.round(ratio(cdcSteady, pollSteady), 3), "")
                    .figure("poll_p50_ms", latencyMs(passes, false, 50), "ms")
                    .figure("poll_p99_ms", latencyMs(passes, false, 99), "ms")
                    .figure("cdc_p50_ms", latencyMs(passes, true, 50), "ms")
                    .figure("cdc_p99_ms", latencyMs(passes, true, 99), "ms");
            log("steady at %,.0f/s: database CPU per 1,000 messages: polling %.1f ms, CDC %.1f ms (ratio %.3f); end to end,"
                    + " from each transaction's due time to its rows' arrival: polling p50 %.2f / p99 %.2f ms, CDC p50 %.2f /"
                    + " p99 %.2f ms", rate, pollSteady, cdcSteady, ratio(cdcSteady, pollSteady), latencyMs(passes, false, 50),
                    latencyMs(passes, false, 99), latencyMs(passes, true, 50), latencyMs(passes, true, 99));
            report.target("db_cpu_ratio", "<=", 0.3);
        }
        report.figure("rows", rows, "msgs")
                .figure("steady_rows", rate > 0 ? steadyRows : 0, "msgs")
                .figure("rounds", rounds, "")
                .figure("lost", lost, "msgs")
                .figure("cdc_duplicates", cdcDuplicates, "msgs")
                .figure("poll_duplicates", pollDuplicates, "msgs")
                .figure("order_violations", violations, "msgs")
                .figure("outbox_left", left, "rows");
        report.target("lost", "==", 0).target("order_violations", "==", 0);
        report.note("polling: an in-process relay, " + relayRun.workers + " workers, batch " + relayRun.batchSize
                + "; CDC: Debezium's embedded engine (" + (env.mariadb ? "MariaDB connector, binlog" : "PostgreSQL connector,"
                + " pgoutput, insert-only publication") + ") with TxboxOutboxRouter in its own JVM, publishing with acks=all"
                + " and an idempotent producer and committing offsets after each batch is confirmed");
        report.note("backlog: written with the reader stopped, then drained; the drain rate runs from the first record's"
                + " broker timestamp to the last one's. Steady: paced writers with the reader running; latency per message"
                + " from the time its writer transaction was due by the pace to the arrival of its step key at a consumer");
        report.note("database CPU: " + (env.mariadb ? "the MariaDB server process over the phase (its sessions are threads)"
                : "the writers' sessions, plus the relay's (polling) or the slot's walsender over its life (CDC)")
                + "; db_cpu_ratio: CDC / polling at the steady rate; backlog_db_cpu_ratio: writing and draining the backlog");
        StringBuilder table = new StringBuilder();
        for (Pass p : passes) {
            table.append(String.format("%-14s %-8s %s%n", p.path() + ":", p.steady() ? "steady" : "backlog", describe(p)));
        }
        html.heading("Phases, in the order they ran").pre(table.toString());
    }

    private List<Pass> pollPath(int round) throws Exception {
        Outbox polling = Outbox.builder().tables(env.tables).build();
        String[] topics = {topic("poll-warm", round), topic("poll-steady", round), topic("poll", round)};
        Pass steady = null;
        try (Relay relay = relay(polling, topics)) {
            relay.start();
            warmup("polling relay", polling, topics[0]);
            if (rate > 0) {
                steady = steady(false, polling, topics[1], readerAccounts(List.of(env.applicationName("relay")), List.of()));
            }
        }
        long from = claimRows(rows);
        CpuAccount write = dbAccount(List.of(env.applicationName("writers")), List.of());
        double writeRate = write(polling, topics[2], from, rows, 0).join();
        double dbWrite = write.since()[2];
        CpuAccount read = dbAccount(List.of(env.applicationName("relay")), List.of());
        Pass backlog;
        try (Relay relay = relay(polling, topics)) {
            relay.start();
            Drain d = drain(topics[2], from);
            backlog = new Pass(false, false, rows, d.rate(), writeRate, d.back(), d.order(), dbWrite, read.since()[2], null);
        }
        log("polling relay backlog: %s", describe(backlog));
        return steady == null ? List.of(backlog) : List.of(steady, backlog);
    }

    private Relay relay(Outbox polling, String[] topics) {
        Relay.Builder b = relayRun.builder(relayPool, env.tables, "bench-relay").wakeOn(polling);
        for (String t : topics) {
            b.route(t, Destination.kafkaRoute(env.kafkaBootstrap(), t, relayRun.producer, relayRun.strictFencing));
        }
        return b.build();
    }

    private List<Pass> cdcPath(int round) throws Exception {
        Outbox capturing = Outbox.builder().tables(env.tables).changeDataCapture().build();
        String[] topics = {topic("cdc-warm", round), topic("cdc-steady", round), topic("cdc", round)};
        // the slot, publication and topic prefix: lower case, unique per round; offsets kept between its engines
        String name = "txbox_bench_" + base + "_" + round;
        Path offsets = Files.createTempDirectory("txbox-bench-offsets-");
        Pass steady = null;
        Pass backlog;
        long t0 = System.nanoTime();
        try (EngineChild engine = EngineChild.start(env, name, offsets)) {
            log("Debezium engine streaming after %.1f s", (System.nanoTime() - t0) / 1e9);
            warmup("Debezium", capturing, topics[0]);
            if (rate > 0) {
                steady = steady(true, capturing, topics[1], readerAccounts(List.of(), engine.walsender()));
            }
            engine.pause();
            long from = claimRows(rows);
            CpuAccount write = dbAccount(List.of(env.applicationName("writers")), List.of());
            double writeRate = write(capturing, topics[2], from, rows, 0).join();
            double dbWrite = write.since()[2];
            // MariaDB: the server's CPU from the restart on; PostgreSQL: the new walsender's whole life, read below
            CpuAccount read = env.mariadb ? dbAccount(List.of(), List.of()) : null;
            engine.resume();
            Drain d = drain(topics[2], from);
            double dbRead = read != null ? read.since()[2] : CpuAccount.lifetimeSeconds(engine.walsender());
            backlog = new Pass(true, false, rows, d.rate(), writeRate, d.back(), d.order(), dbWrite, dbRead, null);
            engine.awaitReady();
        }
        log("Debezium backlog: %s", describe(backlog));
        return steady == null ? List.of(backlog) : List.of(steady, backlog);
    }

    private String topic(String hint, int round) {
        String t = "bench-cdc-" + base + "-" + hint + "-" + round;
        env.createTopic(t, 4);
        return t;
    }

    /** The next {@code n} row numbers. */
    private long claimRows(long n) {
        long from = nextRow;
        nextRow += n;
        return from;
    }

    /**
     * Counts the database CPU of the sessions with these application names and the processes
     * {@code backends} (PostgreSQL), or of the whole server process (MariaDB).
     */
    private CpuAccount dbAccount(List<String> applicationNames, List<Long> backends) throws java.sql.SQLException {
        return env.mariadb ? CpuAccount.start(env, List.of(), List.of(), CpuAccount.localMariaDb())
                : CpuAccount.start(env, List.of(), applicationNames, backends);
    }

    /** The reading side's account while writers run too: none on MariaDB, where the writers' one counts the server. */
    private CpuAccount readerAccounts(List<String> applicationNames, List<Long> backends) throws java.sql.SQLException {
        return env.mariadb ? CpuAccount.start(env, List.of(), List.of(), List.of()) : dbAccount(applicationNames, backends);
    }

    /** Messages per second over one path's backlogs: their rows over their summed drain times. */
    private double rate(List<Pass> passes, boolean cdc) {
        double secs = passes.stream().filter(p -> p.cdc() == cdc && !p.steady()).mapToDouble(p -> p.messages() / p.msgsPerSec()).sum();
        return passes.stream().filter(p -> p.cdc() == cdc && !p.steady()).mapToLong(Pass::messages).sum() / secs;
    }

    /** CPU seconds to milliseconds per 1,000 messages, over one path's phases of one kind. */
    private static double msPer1000(List<Pass> passes, boolean cdc, boolean steady, ToDoubleFunction<Pass> seconds) {
        List<Pass> these = passes.stream().filter(p -> p.cdc() == cdc && p.steady() == steady).toList();
        long n = these.stream().mapToLong(Pass::messages).sum();
        return n == 0 ? 0 : these.stream().mapToDouble(seconds).sum() * 1e6 / n;
    }

    private static double ratio(double cdc, double poll) {
        return poll > 0 ? cdc / poll : 0;
    }

    private static double mean(List<Pass> passes, boolean cdc, ToDoubleFunction<Pass> f) {
        return passes.stream().filter(p -> p.cdc() == cdc).mapToDouble(f).average().orElse(0);
    }

    private String describe(Pass p) {
        String cpu = env.mariadb ? (p.steady() ? String.format("server %.1f ms", p.dbWrite() * 1e6 / p.messages())
                : String.format("server while writing %.1f ms, while draining %.1f ms", p.dbWrite() * 1e6 / p.messages(),
                        p.dbRead() * 1e6 / p.messages()))
                : String.format("writers %.1f ms, %s %.1f ms", p.dbWrite() * 1e6 / p.messages(), p.cdc() ? "walsender" : "relay",
                        p.dbRead() * 1e6 / p.messages());
        String what = p.steady() ? String.format("%,.0f msg/s arriving (writers %,.0f rows/s), p50 %.2f / p99 %.2f ms",
                p.msgsPerSec(), p.writeRate(), p.latency().getValueAtPercentile(50) / 1000.0,
                p.latency().getValueAtPercentile(99) / 1000.0)
                : String.format("drained at %,.0f msg/s (written at %,.0f rows/s)", p.msgsPerSec(), p.writeRate());
        return String.format("%s; database CPU per 1,000: %s; %s; %s read back", what, cpu, p.order(), p.back());
    }

    private void warmup(String path, Outbox outbox, String topic) throws Exception {
        if (warmupRows <= 0) {
            return;
        }
        long t0 = System.nanoTime();
        CompletableFuture<Double> writing = write(outbox, topic, claimRows(warmupRows), warmupRows, 0);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, warmupRows, IDLE);
        writing.join();
        log("%s warm-up: %,d messages in %.1f s (not measured), %,d not read back", path, warmupRows,
                (System.nanoTime() - t0) / 1e9, back.lost());
    }

    /**
     * The steady phase: {@link #steadyRows} rows paced to {@link #rate} while a consumer reads the
     * topic from its start until every step key arrived; the database CPU of the writers' sessions
     * and of the reading side's ({@code reader}).
     */
    private Pass steady(boolean cdc, Outbox outbox, String topic, CpuAccount reader) throws Exception {
        KeyOrder order = new KeyOrder();
        AtomicLong first = new AtomicLong();
        AtomicLong lastNew = new AtomicLong();
        Histogram latency = new Histogram(3);
        long from = claimRows(steadyRows);
        CpuAccount writersCpu = dbAccount(List.of(env.applicationName("writers")), List.of());
        long t0 = System.nanoTime();
        CompletableFuture<Double> writing = write(outbox, topic, from, steadyRows, rate);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, steadyRows, IDLE, r -> {
            long row = record(order, r);
            if (row >= 0) {
                long now = System.nanoTime();
                first.compareAndSet(0, now);
                lastNew.set(now);
                latency.recordValue(Math.max(0, (now - due(t0, row - from)) / 1000));
            }
        });
        double dbWrite = writersCpu.since()[2];
        double dbRead = reader.since()[2];
        double writeRate = writing.join();
        double secs = Math.max(1e-3, ((lastNew.get() != 0 ? lastNew.get() : System.nanoTime()) - t0) / 1e9);
        Pass p = new Pass(cdc, true, steadyRows, steadyRows / secs, writeRate, back, order, dbWrite, dbRead, latency);
        log("%s steady: %s", p.path(), describe(p));
        return p;
    }

    /** What {@link #drain} read: the rate from the first record's broker timestamp to the last new one's. */
    private record Drain(double rate, KafkaAdmin.ReadBack back, KeyOrder order) {}

    /** Reads the backlog's {@link #rows} rows from {@code topic}'s start while its reader drains them. */
    private Drain drain(String topic, long from) {
        KeyOrder order = new KeyOrder();
        AtomicLong first = new AtomicLong(Long.MAX_VALUE);
        AtomicLong last = new AtomicLong(Long.MIN_VALUE);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, rows, IDLE, r -> {
            if (record(order, r) >= 0) {
                first.accumulateAndGet(r.timestamp(), Math::min);
                last.accumulateAndGet(r.timestamp(), Math::max);
            }
        });
        // at least a millisecond: a tiny backlog can arrive within one broker timestamp
        double secs = first.get() == Long.MAX_VALUE ? IDLE.toSeconds() : Math.max(1, last.get() - first.get() + 1) / 1e3;
        return new Drain(rows / secs, back, order);
    }

    /** Adds a record to the per-key order; its row number if its step key is new, else -1. */
    private static long record(KeyOrder order, org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r) {
        String step = KafkaAdmin.stepKey(r);
        if (step == null || r.key() == null) {
            return -1;
        }
        int before = order.distinct();
        long row = Long.parseLong(step.substring(1, step.length() - Backlog.STEP.length() - 1));
        order.add(new String(r.key(), StandardCharsets.UTF_8), row);
        return order.distinct() > before ? row : -1;
    }

    /**
     * When the paced writers' transaction holding row {@code offset} (counted from the phase's
     * first row) is due: the order {@link Backlog#fill} gives key-owned rows, at {@link #rate}.
     */
    private long due(long t0, long offset) {
        long thread = offset % writers;
        long own = (offset - thread) / ((long) txSize * writers);
        long ordinal = own * writers + thread;
        return t0 + (long) (ordinal * txSize / rate * 1e9);
    }

    /** Microseconds to milliseconds, at the {@code percentile} of one path's steady phases. */
    private static double latencyMs(List<Pass> passes, boolean cdc, double percentile) {
        Histogram all = new Histogram(3);
        passes.stream().filter(p -> p.cdc() == cdc && p.steady()).forEach(p -> all.add(p.latency()));
        return all.getTotalCount() == 0 ? 0 : Report.round(all.getValueAtPercentile(percentile) / 1000.0, 2);
    }

    /** The writers on a thread of their own: key-owned, {@code txSize} rows per transaction; their rows per second. */
    private CompletableFuture<Double> write(Outbox outbox, String topic, long from, long n, double pace) {
        CompletableFuture<Double> done = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                done.complete(Backlog.fill(writerPool, outbox, topic, from, n, writers, txSize, payload, pace, null, KEYS, true));
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "cdc-bench-writers");
        t.start();
        return done;
    }
}
