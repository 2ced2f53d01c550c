package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;

/**
 * relay-kafka, relay-rabbitmq: how fast the relay empties the outbox.
 *
 * <p>{@code --mode drain} (default): {@code --rows} rows (default 200,000, 400-byte payloads)
 * are written first, then the relay starts; the figure is rows / time until the last one was
 * confirmed and deleted. {@code --mode concurrent}: the relay runs from the start while
 * {@code --writers} threads insert the same number of rows ({@code --tx-size} per transaction,
 * paced to {@code --rate} rows/s if set); the figure is rows / time from the first insert to
 * the last delete. Either way everything is read back from the broker: lost = rows never seen.
 */
final class RelayThroughput extends Scenario {
    private final Broker broker;
    private long rows;
    private String mode;
    private int payloadSize;
    private int fillThreads;
    private int txSize;
    private double rate;
    private RelayRun relayRun;
    private boolean traceSql;
    private boolean bareWarmup;
    private List<Integer> bareWindows;
    private List<Bare.Msg> bareMsgs;
    private long lost = -1;

    RelayThroughput(Broker broker) {
        this.broker = broker;
    }

    @Override
    void configure(Options o) {
        rows = o.longValue("rows", 200_000, "rows in the backlog");
        mode = o.string("mode", "drain", "drain (backlog first) or concurrent (writers while it drains)");
        if (!mode.equals("drain") && !mode.equals("concurrent")) {
            throw new Options.UsageException("--mode must be drain or concurrent, but was '" + mode + "'");
        }
        payloadSize = o.intValue("payload", 400, "payload bytes per row");
        fillThreads = o.intValue("writers", mode.equals("drain") ? 2 : 4, "writer threads (drain 2, concurrent 4)");
        txSize = o.intValue("tx-size", mode.equals("drain") ? 1000 : 10, "rows per writer transaction (drain 1000, concurrent 10)");
        rate = o.doubleValue("rate", 0, "writers' total rows per second, 0 = as fast as they can");
        relayRun = new RelayRun(o).withWarmup(o);
        traceSql = o.flag("trace-sql", "time every relay statement and print the table");
        bareWarmup = !o.flag("no-bare-warmup", "drain mode: skip the bare client's unmeasured pass before the relay starts"
                + " (without it, the relay alone pays for compiling the broker client's hot code)");
        bareWindows = new ArrayList<>();
        for (String w : o.string("bare-windows", "500,2000,8000",
                "confirm windows the bare RabbitMQ loop tries (the best counts)").split(",")) {
            try {
                bareWindows.add(Integer.parseInt(w.trim()));
            } catch (NumberFormatException e) {
                throw new Options.UsageException("--bare-windows wants whole numbers like 500,2000, but had '" + w + "'");
            }
        }
    }

    @Override
    boolean failedCorrectness() {
        return lost != 0;
    }

    /**
     * Where the CPU went, relay phase against bare phase (both include whatever else runs on the
     * machine only through the load average): whether the relay is short of CPU, not of round trips.
     */
    private void cpuNote(double[] relay, double[] bare, long rows, double relaySecs, double bareSecs) {
        report.figure("cpu_relay_jvm_s", Report.round(relay[0], 2), "s")
                .figure("cpu_relay_jvm_jit_s", Report.round(relay[3], 2), "s")
                .figure("cpu_relay_jvm_gc_s", Report.round(relay[4], 2), "s")
                .figure("cpu_relay_broker_s", Report.round(relay[1], 2), "s")
                .figure("cpu_relay_db_sessions_s", Report.round(relay[2], 2), "s")
                .figure("cpu_bare_jvm_s", Report.round(bare[0], 2), "s")
                .figure("cpu_bare_jvm_jit_s", Report.round(bare[3], 2), "s")
                .figure("cpu_bare_broker_s", Report.round(bare[1], 2), "s");
        double k = rows / 1000.0;
        String line = String.format("CPU per 1,000 rows: relay phase %.1f ms (JVM %.1f, of it JIT compiler %.1f and GC %.1f;"
                        + " broker %.1f, database sessions %.1f) over %.2f s = %.2f cores; bare phase %.1f ms (JVM %.1f,"
                        + " of it JIT compiler %.1f and GC %.1f; broker %.1f) over its %.2f s call = %.2f cores",
                (relay[0] + relay[1] + relay[2]) * 1000 / k, relay[0] * 1000 / k, relay[3] * 1000 / k, relay[4] * 1000 / k,
                relay[1] * 1000 / k, relay[2] * 1000 / k, relaySecs, (relay[0] + relay[1] + relay[2]) / relaySecs,
                (bare[0] + bare[1]) * 1000 / k, bare[0] * 1000 / k, bare[3] * 1000 / k, bare[4] * 1000 / k,
                bare[1] * 1000 / k, bareSecs, (bare[0] + bare[1]) / bareSecs);
        log("%s", line);
        report.note(line);
    }

    /**
     * {@code -Dtxbox.bench.profile=<async-profiler options>} (with async-profiler's Java API on
     * the boot class path, see PERFORMANCE.md): profiles the drain phase only, from the relay's
     * start to its last confirmed row, so neither the warm-up, the backlog fill nor the bare
     * client lands in the profile.
     */
    private static void profiler(String action) throws Exception {
        String options = System.getProperty("txbox.bench.profile");
        if (options == null) {
            return;
        }
        Class<?> api = Class.forName("one.profiler.AsyncProfiler");
        Object profiler = api.getMethod("getInstance", String.class)
                .invoke(null, System.getProperty("txbox.bench.profile.lib", "/tmp/ap/linux-x64/libasyncProfiler.so"));
        log("profiler: %s", api.getMethod("execute", String.class).invoke(profiler, action + "," + options).toString().trim());
    }

    /**
     * The same backlog again (same size and payloads, fresh keys), drained by {@link ByHand}'s
     * loop with the relay's workers, batch size and producer settings; rows per second.
     */
    private double byHand(javax.sql.DataSource writers, javax.sql.DataSource ds, Outbox outbox, Destination dest,
            byte[] payload) throws Exception {
        String name = dest.name + "-hand";
        if (relayRun.warmupRows() > 0) {
            // its own warm-up, as the relay had one: the loop's claim, send and delete compiled
            Backlog.fill(writers, outbox, name, 2 * rows, relayRun.warmupRows(), fillThreads, txSize, payload, 0, null);
            dest.byHand(ds, name, relayRun.batchSize, relayRun.workers);
        }
        Backlog.fill(writers, outbox, name, rows, rows, fillThreads, txSize, payload, 0, null);
        RelayRun.vacuum(env);
        double rate = dest.byHand(ds, name, relayRun.batchSize, relayRun.workers);
        long left = RelayRun.outboxRows(env);
        if (left != 0) {
            throw new IllegalStateException("the by-hand loop left " + left + " rows in the outbox");
        }
        log("by hand: %,.0f msg/s", rate);
        return rate;
    }

    @Override
    void run() throws Exception {
        HikariDataSource writers = env.pool("writers", fillThreads);
        HikariDataSource relayPool = env.pool("relay", relayRun.poolSize());
        SqlTiming timing = traceSql ? new SqlTiming() : null;
        javax.sql.DataSource relayDs = timing != null ? timing.wrap(relayPool) : relayPool;
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        byte[] payload = payload(payloadSize);
        relayRun.warmup(env, writers, relayDs, outbox, broker);
        try (Destination dest = Destination.create(broker, env, broker.id, relayRun.producer, relayRun.strictFencing)) {
            log("%s, mode %s, %,d rows of %d B", dest.describe(), mode, rows, payloadSize);
            long start = System.nanoTime();
            Timeline writeLine = new Timeline("written", start);
            Timeline pubLine = new Timeline("published", start);
            RelayCounter counter = new RelayCounter(pubLine);
            counter.target(rows);
            double fillRate;
            long t0;
            long writersDone = 0;
            long backlogAtEnd = 0;
            Relay relay;
            CpuAccount relayCpu = null;
            // the RabbitMQ broker is not a child process: count it where it is the destination
            List<ProcessHandle> brokers = dest instanceof Destination.RabbitDestination ? CpuAccount.localRabbit() : List.of();
            if (mode.equals("drain")) {
                fillRate = Backlog.fill(writers, outbox, dest.name, 0, rows, fillThreads, txSize, payload, 0, writeLine);
                log("backlog of %,d rows written at %,.0f rows/s", rows, fillRate);
                bareMsgs = Bare.snapshot(env, dest.name);
                if (bareWarmup) {
                    // The broker client's send path is the hottest code of both phases; compiled
                    // here, before either is measured, it is warm for the relay as it is for the
                    // bare client after it (in a long-running relay it is always warm).
                    log("bare client warm-up (not measured): %s", dest.bare(bareMsgs, bareWindows.subList(0, 1)).detail());
                }
                RelayRun.vacuum(env);
                relay = relayRun.build(relayDs, env, dest, counter, null, "bench-relay");
                relayCpu = CpuAccount.start(env, "relay", brokers);
                profiler("start");
                t0 = System.nanoTime();
                relay.start();
                counter.await(Duration.ofSeconds(60));
                profiler("stop");
            } else {
                bareMsgs = Bare.generated(rows, dest.name, payloadSize);
                relay = relayRun.build(relayDs, env, dest, counter, outbox, "bench-relay");
                relay.start();
                t0 = System.nanoTime();
                fillRate = Backlog.fill(writers, outbox, dest.name, 0, rows, fillThreads, txSize, payload, rate, writeLine);
                writersDone = System.nanoTime();
                backlogAtEnd = rows - counter.published.get();
                log("%,d rows written at %,.0f rows/s while the relay ran; %,d not yet published", rows, fillRate, backlogAtEnd);
                counter.await(Duration.ofSeconds(60));
            }
            double[] relayCost = relayCpu == null ? null : relayCpu.since();
            double secs = (counter.reachedAt() - t0) / 1e9;
            double msgsPerSec = rows / secs;
            relay.close();
            long left = RelayRun.outboxRows(env);
            log("relay done: %,.0f msg/s over %.1f s; %d rows left in the outbox; reading back", msgsPerSec, secs, left);
            KafkaAdmin.ReadBack back = dest.readBack(rows, Duration.ofSeconds(15));
            lost = back.lost() + left;
            Histogram batchLatency = counter.batchLatencyMicros.getIntervalHistogram();
            // the bare client, same messages, same broker, same run: what the relay is measured against
            log("bare client: %,d messages", bareMsgs.size());
            CpuAccount bareCpu = CpuAccount.start(env, null, brokers);
            long bareStart = System.nanoTime();
            Bare.Result bare = dest.bare(bareMsgs, bareWindows);
            double bareWall = (System.nanoTime() - bareStart) / 1e9;
            double[] bareCost = bareCpu.since();
            bareMsgs = null;
            double ratio = msgsPerSec / bare.msgsPerSec();
            log("%s; relay / bare = %.3f", bare.detail(), ratio);
            double byHand = mode.equals("drain") ? byHand(writers, relayPool, outbox, dest, payload) : 0;

            report.figure("msgs_per_sec", Report.round(msgsPerSec, 0), "msg/s")
                    .figure("bare_msgs_per_sec", Report.round(bare.msgsPerSec(), 0), "msg/s")
                    .figure("ratio_to_bare", Report.round(ratio, 3), "")
                    .figure("seconds", Report.round(secs, 2), "s")
                    .figure("rows", rows, "rows")
                    .figure("lost", lost, "msgs")
                    .figure("duplicates_read_back", back.duplicates(), "msgs")
                    .figure("write_rows_per_sec", Report.round(fillRate, 0), "rows/s")
                    .figure("batches", counter.batches.get(), "")
                    .figure("batch_publish_p50_ms", InboxOverhead.ms(batchLatency.getValueAtPercentile(50)), "ms")
                    .figure("batch_publish_p99_ms", InboxOverhead.ms(batchLatency.getValueAtPercentile(99)), "ms")
                    .figure("publish_failures", counter.failed.get(), "msgs")
                    .figure("dead_lettered", counter.dead.get(), "msgs");
            if (writersDone != 0) {
                // how far the relay lagged behind the writers: rows still waiting when the last
                // write committed, and how long it then took to publish them
                report.figure("backlog_when_writers_done", backlogAtEnd, "rows")
                        .figure("drain_after_writers_s", Report.round(Math.max(0, counter.reachedAt() - writersDone) / 1e9, 2), "s");
            }
            report.target("msgs_per_sec", ">=", broker == Broker.KAFKA ? 50_000 : 20_000);
            report.target("ratio_to_bare", ">=", broker == Broker.KAFKA ? 0.85 : 0.90);
            if (byHand > 0) {
                report.figure("by_hand_msgs_per_sec", Report.round(byHand, 0), "msg/s")
                        .figure("ratio_to_by_hand", Report.round(msgsPerSec / byHand, 3), "");
                report.target("ratio_to_by_hand", ">=", 0.95);
                report.note("by hand: " + relayRun.workers + " threads, each claiming " + relayRun.batchSize
                        + " rows FOR UPDATE SKIP LOCKED in id order, sending them, awaiting every ack, deleting by id"
                        + " and committing (no lanes, fencing, order, retries, dead letters or metrics)");
            }
            report.target("lost", "==", 0);
            report.note(dest.describe());
            if (mode.equals("drain")) {
                report.note(bareWarmup ? "the bare client ran one unmeasured pass over the same messages before the relay"
                        + " started, so both phases run with its send path compiled" : "--no-bare-warmup: the relay ran"
                        + " first and alone paid for compiling the broker client's send path");
            }
            report.note(bare.detail());
            if (relayCost != null) {
                cpuNote(relayCost, bareCost, rows, secs, bareWall);
            }
            if (timing != null) {
                report.detail("relay_sql", timing.summary());
                report.note("traced run (--trace-sql): relay database time per statement follows");
                System.out.print(timing.table());
                html.heading("Relay database time per statement").pre(timing.table());
            }
            double target = broker == Broker.KAFKA ? 50_000 : 20_000;
            html.paragraph(String.format("%s, mode %s: %,d rows of %d B drained at %,.0f msg/s (%.1f s); lost %d."
                                    + " Bare client, same messages and broker: %,.0f msg/s; ratio_to_bare %.3f.",
                            broker.id, mode, rows, payloadSize, msgsPerSec, secs, lost, bare.msgsPerSec(), ratio))
                    .paragraph(rows < 100_000 ? String.format("Short run: %,d rows drained in %.1f s; rates of a few seconds"
                            + " swing with start-up and the machine's load (the default is 200,000 rows).", rows, secs) : "")
                    // published on its own chart: a write burst of 100k rows/s would flatten it otherwise
                    .timeline("Rows per second published by the relay (relay started at "
                                    + Report.round((t0 - start) / 1e9, 1) + " s; warm-up rows drained before)", "rows/s",
                            List.of(pubLine.series(0)), List.of(Html.Mark.x((t0 - start) / 1e9, "relay started"),
                                    Html.Mark.y(target, "target"), Html.Mark.y(bare.msgsPerSec(), "bare client")))
                    .timeline("Rows per second written to the outbox", "rows/s", List.of(writeLine.series(0)))
                    .percentiles("Relay batch latency (first send to last broker confirmation)", List.of("batch"),
                            List.of(batchLatency), 1000.0, "ms");
        }
    }
}
