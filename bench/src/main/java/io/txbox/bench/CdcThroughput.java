package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import org.HdrHistogram.Histogram;

/**
 * cdc-kafka: the same writers through the polling relay and through change data capture, end to
 * end, in one run. The writers are relay-kafka's concurrent mode ({@code --rows}, {@code
 * --writers} threads, {@code --tx-size} rows per transaction, paced to {@code --rate} if set), each
 * routing key written by one thread so that its order is defined. A polling pass runs an
 * in-process relay ({@link RelayRun}'s settings) on the plain outbox. A CDC pass runs the outbox in
 * CDC mode, read by Debezium's embedded engine (PostgreSQL connector, pgoutput) with txbox's
 * router in a JVM of its own ({@link EngineChild}), started for the pass: a polling pass runs
 * without it. Each of {@code --rounds} runs both passes, the order swapped every other round so
 * that a drifting machine favours neither. A consumer reads every record back while the writers
 * run; a pass's figure is rows / time from its first write to the arrival of its last new step
 * key, {@code cdc_to_poll} the CDC rate over the polling one (all rounds). Also per pass: the CPU
 * of the database sessions per 1,000 messages (the writers', and the relay's or the engine's
 * walsender), and {@code db_cpu_ratio}. With {@code --rate}, also each path's end-to-end p50 and
 * p99: from the time a message's transaction was due by the pace to its arrival. The oracle: every step key arrives, in per-key order
 * ({@link KeyOrder}), and duplicates are counted.
 */
final class CdcThroughput extends Scenario {
    /** Routing keys: relay-kafka's 1,000, so that rows spread over every lane and partition. */
    private static final int KEYS = 1000;
    /** How long the reader waits for a new step key before it gives up on the rest. */
    private static final Duration IDLE = Duration.ofSeconds(60);

    private long rows;
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

    /**
     * One pass: end-to-end rate, the writers' rate, what the reader found, and the CPU seconds of
     * the writers' database sessions and of the reading side's (the relay's sessions, or the walsender).
     */
    private record Pass(boolean cdc, double msgsPerSec, double writeRate, double seconds, KafkaAdmin.ReadBack back,
            KeyOrder order, double dbWriters, double dbReader, Histogram latency) {
        double dbCpu() {
            return dbWriters + dbReader;
        }
    }

    @Override
    void configure(Options o) {
        rows = o.longValue("rows", 100_000, "messages per pass");
        payloadSize = o.intValue("payload", 400, "payload bytes per message");
        writers = o.intValue("writers", 4, "writer threads (each owns its routing keys; must divide " + KEYS + ")");
        if (writers < 1 || KEYS % writers != 0) {
            throw new Options.UsageException("--writers must divide " + KEYS + " (each owns its keys), but was " + writers);
        }
        txSize = o.intValue("tx-size", 10, "messages per writer transaction");
        rate = o.doubleValue("rate", 0, "writers' total messages per second, 0 = as fast as they can");
        warmupRows = o.longValue("warmup-rows", 20_000, "messages through each path before each measured pass");
        rounds = o.intValue("rounds", 2, "rounds of one polling and one CDC pass (every other round CDC first)");
        if (rounds < 1) {
            throw new Options.UsageException("--rounds must be at least 1, but was " + rounds);
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
        log("%,d messages of %d B per pass, %d writers x %d per transaction%s, %d rounds", rows, payloadSize, writers,
                txSize, rate > 0 ? String.format(", paced to %,.0f/s", rate) : "", rounds);
        List<Pass> passes = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            boolean cdcFirst = round % 2 == 1;
            for (boolean cdc : new boolean[] {cdcFirst, !cdcFirst}) {
                passes.add(cdc ? cdcPass(passes.size()) : pollPass(passes.size()));
            }
        }
        long left = RelayRun.outboxRows(env);

        double pollRate = rate(passes, false);
        double cdcRate = rate(passes, true);
        double pollDb = msPer1000(passes, false, Pass::dbCpu);
        double cdcDb = msPer1000(passes, true, Pass::dbCpu);
        double ratio = cdcRate / pollRate;
        lost = left;
        violations = 0;
        long pollDuplicates = 0;
        long cdcDuplicates = 0;
        List<Double> roundRatios = new ArrayList<>();
        for (int i = 0; i < passes.size(); i++) {
            Pass p = passes.get(i);
            lost += p.back().lost();
            violations += p.order().violationCount();
            pollDuplicates += p.cdc() ? 0 : p.back().duplicates();
            cdcDuplicates += p.cdc() ? p.back().duplicates() : 0;
            if (i % 2 == 1) {
                Pass other = passes.get(i - 1);
                Pass c = p.cdc() ? p : other;
                Pass q = p.cdc() ? other : p;
                roundRatios.add(Report.round(c.msgsPerSec() / q.msgsPerSec(), 3));
            }
        }
        log("CDC / polling = %.3f (rounds: %s); database CPU per 1,000 messages: polling %.1f ms, CDC %.1f ms", ratio,
                roundRatios, pollDb, cdcDb);
        report.figure("cdc_msgs_per_sec", Report.round(cdcRate, 0), "msg/s")
                .figure("poll_msgs_per_sec", Report.round(pollRate, 0), "msg/s")
                .figure("cdc_to_poll", Report.round(ratio, 3), "")
                .detail("cdc_to_poll_by_round", roundRatios)
                .figure("cdc_write_rows_per_sec", Report.round(mean(passes, true, Pass::writeRate), 0), "rows/s")
                .figure("poll_write_rows_per_sec", Report.round(mean(passes, false, Pass::writeRate), 0), "rows/s")
                .figure("cdc_db_cpu_ms_per_1000", Report.round(cdcDb, 1), "ms")
                .figure("poll_db_cpu_ms_per_1000", Report.round(pollDb, 1), "ms")
                .figure("cdc_db_cpu_writers_ms_per_1000", Report.round(msPer1000(passes, true, Pass::dbWriters), 1), "ms")
                .figure("poll_db_cpu_writers_ms_per_1000", Report.round(msPer1000(passes, false, Pass::dbWriters), 1), "ms")
                .figure("cdc_db_cpu_walsender_ms_per_1000", Report.round(msPer1000(passes, true, Pass::dbReader), 1), "ms")
                .figure("poll_db_cpu_relay_ms_per_1000", Report.round(msPer1000(passes, false, Pass::dbReader), 1), "ms")
                .figure("db_cpu_ratio", Report.round(pollDb > 0 ? cdcDb / pollDb : 0, 3), "")
                .figure("rows", rows, "msgs")
                .figure("rounds", rounds, "")
                .figure("lost", lost, "msgs")
                .figure("cdc_duplicates", cdcDuplicates, "msgs")
                .figure("poll_duplicates", pollDuplicates, "msgs")
                .figure("order_violations", violations, "msgs")
                .figure("outbox_left", left, "rows");
        if (rate > 0) {
            report.figure("poll_p50_ms", latencyMs(passes, false, 50), "ms")
                    .figure("poll_p99_ms", latencyMs(passes, false, 99), "ms")
                    .figure("cdc_p50_ms", latencyMs(passes, true, 50), "ms")
                    .figure("cdc_p99_ms", latencyMs(passes, true, 99), "ms");
            log("end to end, from each transaction's due time to its rows' arrival: polling p50 %.2f / p99 %.2f ms,"
                    + " CDC p50 %.2f / p99 %.2f ms", latencyMs(passes, false, 50), latencyMs(passes, false, 99),
                    latencyMs(passes, true, 50), latencyMs(passes, true, 99));
        }
        report.target("lost", "==", 0).target("order_violations", "==", 0).target("db_cpu_ratio", "<=", 0.3);
        report.note("polling: an in-process relay, " + relayRun.workers + " workers, batch " + relayRun.batchSize
                + "; CDC: Debezium's embedded engine (PostgreSQL connector, pgoutput, insert-only publication) with"
                + " TxboxOutboxRouter in its own JVM, publishing with acks=all and an idempotent producer and committing"
                + " offsets after each batch is confirmed");
        report.note("each pass: rows / time from the first write to the arrival of the last new step key at a consumer"
                + " reading the topic from its start; a polling pass runs without the engine; database CPU: the writers'"
                + " sessions, plus the relay's (polling) or the slot's walsender (CDC)");
        if (rate > 0) {
            report.note("latency (with --rate): per message, from the time its writer transaction was due by the pace"
                    + " to the arrival of its step key at the consumer; a writer that falls behind its pace adds its lag");
        }
        StringBuilder table = new StringBuilder();
        for (Pass p : passes) {
            table.append(String.format("%-13s %s%n", p.cdc() ? "Debezium:" : "polling relay:", describe(p)));
        }
        html.heading("Passes, in the order they ran").pre(table.toString());
    }

    private Pass pollPass(int index) throws Exception {
        Outbox polling = Outbox.builder().tables(env.tables).build();
        String warm = topic("poll-warm", index);
        String measured = topic("poll", index);
        Relay.Builder b = relayRun.builder(relayPool, env.tables, "bench-relay").wakeOn(polling);
        for (String t : new String[] {warm, measured}) {
            b.route(t, Destination.kafkaRoute(env.kafkaBootstrap(), t, relayRun.producer, relayRun.strictFencing));
        }
        try (Relay relay = b.build()) {
            relay.start();
            warmup("polling relay", polling, warm, index);
            return pass(false, polling, measured, index, List.of(env.applicationName("relay")), List.of());
        }
    }

    private Pass cdcPass(int index) throws Exception {
        Outbox capturing = Outbox.builder().tables(env.tables).changeDataCapture().build();
        String warm = topic("cdc-warm", index);
        String measured = topic("cdc", index);
        long t0 = System.nanoTime();
        // the slot, publication and topic prefix: lower case, unique per pass
        try (EngineChild engine = EngineChild.start(env, "txbox_bench_" + base + "_" + index)) {
            log("Debezium engine streaming after %.1f s", (System.nanoTime() - t0) / 1e9);
            warmup("Debezium", capturing, warm, index);
            return pass(true, capturing, measured, index, List.of(), engine.walsender());
        }
    }

    private String topic(String hint, int index) {
        String t = "bench-cdc-" + base + "-" + hint + "-" + index;
        env.createTopic(t, 4);
        return t;
    }

    /** Messages per second over all passes of one path: their rows over their summed times. */
    private double rate(List<Pass> passes, boolean cdc) {
        double secs = passes.stream().filter(p -> p.cdc() == cdc).mapToDouble(Pass::seconds).sum();
        return passes.stream().filter(p -> p.cdc() == cdc).count() * rows / secs;
    }

    /** CPU seconds to milliseconds per 1,000 messages, over all passes of one path. */
    private double msPer1000(List<Pass> passes, boolean cdc, ToDoubleFunction<Pass> seconds) {
        long n = passes.stream().filter(p -> p.cdc() == cdc).count() * rows;
        return passes.stream().filter(p -> p.cdc() == cdc).mapToDouble(seconds).sum() * 1e6 / n;
    }

    private static double mean(List<Pass> passes, boolean cdc, ToDoubleFunction<Pass> f) {
        return passes.stream().filter(p -> p.cdc() == cdc).mapToDouble(f).average().orElse(0);
    }

    private String describe(Pass p) {
        return String.format("%,.0f msg/s end to end over %.2f s (writers %,.0f rows/s); database CPU per 1,000: writers"
                + " %.1f ms, %s %.1f ms; %s; %s read back", p.msgsPerSec(), p.seconds(), p.writeRate(),
                p.dbWriters() * 1e6 / rows, p.cdc() ? "walsender" : "relay", p.dbReader() * 1e6 / rows, p.order(), p.back());
    }

    private void warmup(String path, Outbox outbox, String topic, int index) throws Exception {
        if (warmupRows <= 0) {
            return;
        }
        long t0 = System.nanoTime();
        CompletableFuture<Double> writing = write(outbox, topic, -warmupRows * (index + 1) - 1, warmupRows, 0);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, warmupRows, IDLE);
        writing.join();
        log("%s warm-up: %,d messages in %.1f s (not measured), %,d not read back", path, warmupRows,
                (System.nanoTime() - t0) / 1e9, back.lost());
    }

    /**
     * Writes {@link #rows} rows to {@code topic} through {@code outbox} while a consumer reads the
     * topic from its start until every step key arrived; counts the CPU of the writers' database
     * sessions and of the reading side's: the sessions of {@code pools} (application names) and
     * the processes {@code backends}.
     */
    private Pass pass(boolean cdc, Outbox outbox, String topic, int index, List<String> pools, List<Long> backends)
            throws Exception {
        KeyOrder order = new KeyOrder();
        AtomicLong lastNew = new AtomicLong();
        Histogram latency = new Histogram(3);
        long from = index * rows;
        CpuAccount writersCpu = CpuAccount.start(env, List.of(), List.of(env.applicationName("writers")));
        CpuAccount readerCpu = CpuAccount.start(env, List.of(), pools, backends);
        long t0 = System.nanoTime();
        CompletableFuture<Double> writing = write(outbox, topic, index * rows, rows, rate);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, rows, IDLE, r -> {
            String step = KafkaAdmin.stepKey(r);
            if (step != null && r.key() != null) {
                int before = order.distinct();
                long row = Long.parseLong(step.substring(1, step.length() - Backlog.STEP.length() - 1));
                order.add(new String(r.key(), StandardCharsets.UTF_8), row);
                if (order.distinct() > before) {
                    long now = System.nanoTime();
                    lastNew.set(now);
                    if (rate > 0) {
                        latency.recordValue(Math.max(0, (now - due(t0, row - from)) / 1000));
                    }
                }
            }
        });
        double dbWriters = writersCpu.since()[2];
        double dbReader = readerCpu.since()[2];
        double writeRate = writing.join();
        // nothing arrived at all: the time the reader gave up (the pass counts as lost)
        double secs = ((lastNew.get() != 0 ? lastNew.get() : System.nanoTime()) - t0) / 1e9;
        Pass p = new Pass(cdc, rows / secs, writeRate, secs, back, order, dbWriters, dbReader, latency);
        log("%s: %s", cdc ? "Debezium" : "polling relay", describe(p));
        return p;
    }

    /**
     * When the paced writers' transaction holding row {@code offset} (counted from the pass's
     * first row) is due: the order {@link Backlog#fill} gives key-owned rows, at {@link #rate}.
     */
    private long due(long t0, long offset) {
        long thread = offset % writers;
        long own = (offset - thread) / ((long) txSize * writers);
        long ordinal = own * writers + thread;
        return t0 + (long) (ordinal * txSize / rate * 1e9);
    }

    /** Microseconds to milliseconds, at the {@code percentile} of one path's passes. */
    private static double latencyMs(List<Pass> passes, boolean cdc, double percentile) {
        Histogram all = new Histogram(3);
        passes.stream().filter(p -> p.cdc() == cdc).forEach(p -> all.add(p.latency()));
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
