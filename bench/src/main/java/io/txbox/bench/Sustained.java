package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * sustained: writers at a fixed rate while the relay drains to Kafka, for {@code --minutes}
 * (phase "free"), then as long again with a transaction held open in another session for the
 * last {@code --held-minutes} (phase "held"): a REPEATABLE READ transaction with an xid, which
 * keeps vacuum from removing the rows the relay deleted since it began. Per interval ({@code
 * --interval-s}, a minute by default): drain and write rate, the relay's claim-query p99, the
 * backlog, dead tuples and the size of the outbox table. A DELETE-based queue slows down when
 * its dead rows pile up; {@code last_to_first} and {@code last_to_first_held} (last interval's
 * drain rate / the phase's first) say whether this one does.
 *
 * <p>Autovacuum is what keeps such a table small; where the server has it off, {@code --vacuum
 * auto} (the default) runs {@code VACUUM} of the outbox every 60 s instead, as autovacuum would
 * at its default naptime (a queue table is always past its 20 % threshold).
 *
 * <p>{@code --rate 0} (the default) calibrates: a drain of {@code --calibration-rows} (which is
 * also the JIT warm-up) measures the relay alone, and the writers run at {@code
 * --rate-fraction} of that, leaving the relay headroom for the CPU the writers take.
 */
final class Sustained extends Scenario {
    private double minutes;
    private double heldMinutes;
    private double intervalS;
    private double rate;
    private double rateFraction;
    private long calibrationRows;
    private int writerThreads;
    private int txSize;
    private int payloadSize;
    private RelayRun relayRun;
    private String vacuum;
    private long outboxLeft = -1;

    /** One reported interval. */
    record Interval(String phase, int index, double endS, boolean held, double drainPerSec, double writePerSec,
            long backlog, double claimP50Ms, double claimP99Ms, long claims, long deadTuples, long tableBytes,
            long autovacuums, long benchVacuums, double vacuumMs) {}

    @Override
    String postgresOnly() {
        return "it measures vacuum, dead tuples and a held xid, which are PostgreSQL's";
    }

    @Override
    void configure(Options o) {
        minutes = o.doubleValue("minutes", 10, "minutes of each phase, without and with the held transaction (fractions allowed)");
        heldMinutes = o.doubleValue("held-minutes", 5, "minutes the transaction stays open, at the end of the second phase");
        intervalS = o.doubleValue("interval-s", 60, "seconds per reported interval");
        rate = o.doubleValue("rate", 0, "writers' rows per second; 0 = --rate-fraction of the calibrated drain rate");
        rateFraction = o.doubleValue("rate-fraction", 0.5, "share of the calibrated drain rate the writers take (with --rate 0)");
        calibrationRows = o.longValue("calibration-rows", 50_000, "rows of the calibration drain (also the warm-up)");
        writerThreads = o.intValue("writers", 4, "writer threads");
        txSize = o.intValue("tx-size", 10, "rows per writer transaction");
        payloadSize = o.intValue("payload", 400, "payload bytes per row");
        relayRun = new RelayRun(o);
        vacuum = o.string("vacuum", "auto", "VACUUM of the outbox by the bench: auto (every 60 s when the server's autovacuum"
                + " is off, as autovacuum would at its default naptime), off, or every N seconds");
        if (!vacuum.equals("auto") && !vacuum.equals("off")) {
            try {
                Double.parseDouble(vacuum);
            } catch (NumberFormatException e) {
                throw new Options.UsageException("--vacuum takes auto, off or seconds, but was '" + vacuum + "'");
            }
        }
        if (minutes <= 0 || intervalS <= 0 || heldMinutes < 0 || heldMinutes > minutes) {
            throw new Options.UsageException("--minutes and --interval-s must be positive, --held-minutes between 0 and --minutes");
        }
        if (rate == 0 && calibrationRows <= 0) {
            throw new Options.UsageException("--rate 0 needs --calibration-rows > 0");
        }
    }

    @Override
    boolean failedCorrectness() {
        return outboxLeft != 0;
    }

    @Override
    void run() throws Exception {
        HikariDataSource writers = env.pool("writers", writerThreads);
        HikariDataSource relayPool = env.pool("relay", relayRun.poolSize());
        Recorder claimMicros = new Recorder(3);
        // the claim is the relay's only SELECT with an ORDER BY that reads available_at
        SqlTiming timing = new SqlTiming((sql, nanos) -> {
            if (isClaim(sql)) {
                claimMicros.recordValue(Math.max(0, nanos / 1000));
            }
        });
        javax.sql.DataSource relayDs = timing.wrap(relayPool);
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        byte[] payload = payload(payloadSize);
        try (Destination dest = Destination.create(Broker.KAFKA, env, "sustained", relayRun.producer)) {
            long start = System.nanoTime();
            Timeline writeLine = new Timeline("written", start);
            Timeline pubLine = new Timeline("published", start);
            RelayCounter counter = new RelayCounter(pubLine);
            Relay relay = relayRun.build(relayDs, env, dest, counter, outbox, "bench-sustained");
            double calibrated = 0;
            long next = 0;
            if (calibrationRows > 0) {
                Backlog.fill(writers, outbox, dest.name, next, calibrationRows, 2, 1000, payload, 0, null);
                next += calibrationRows;
                RelayRun.vacuum(env);
                counter.target(calibrationRows);
                long c0 = System.nanoTime();
                relay.start();
                counter.await(Duration.ofSeconds(60));
                calibrated = calibrationRows / ((counter.reachedAt() - c0) / 1e9);
                log("calibration: %,d rows drained at %,.0f msg/s (also the warm-up, not measured)", calibrationRows, calibrated);
            } else {
                relay.start();
            }
            double writeRate = rate > 0 ? rate : calibrated * rateFraction;
            String autovacuum = setting("autovacuum");
            double vacuumEvery = vacuum.equals("off") ? 0 : vacuum.equals("auto") ? (autovacuum.equals("off") ? 60 : 0)
                    : Double.parseDouble(vacuum);
            Vacuumer vacuumer = new Vacuumer(vacuumEvery);
            report.detail("server_autovacuum", autovacuum).detail("bench_vacuum_every_s", vacuumEvery);
            if (vacuumEvery > 0) {
                log("the bench VACUUMs the outbox every %.0f s (server autovacuum: %s)", vacuumEvery, autovacuum);
                vacuumer.start();
            }
            claimMicros.reset();
            long t0 = System.nanoTime();
            double calibrationEndS = (t0 - start) / 1e9;
            List<Interval> intervals = new ArrayList<>();
            AtomicReference<Connection> held = new AtomicReference<>();
            double[] holdMarks = new double[2];
            double phase2StartS = 0;
            long[] last = {counter.published.get(), 0, 0, 0};
            for (String phase : List.of("free", "held")) {
                long phaseStart = System.nanoTime();
                if (phase.equals("held")) {
                    phase2StartS = (phaseStart - start) / 1e9;
                }
                long from = next;
                next += phaseRows(writeRate);
                Thread writing = new Thread(() -> {
                    try {
                        Backlog.fill(writers, outbox, dest.name, from, phaseRows(writeRate), writerThreads, txSize, payload,
                                writeRate, writeLine);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "sustained-writers");
                writing.start();
                int n = (int) Math.ceil(minutes * 60 / intervalS);
                int holdFrom = phase.equals("held") ? (int) Math.floor((minutes - heldMinutes) * 60 / intervalS) : n;
                for (int k = 0; k < n; k++) {
                    if (k == holdFrom && heldMinutes > 0) {
                        held.set(holdTransaction());
                        holdMarks[0] = (System.nanoTime() - start) / 1e9;
                        log("transaction held open (REPEATABLE READ, with an xid) from now to the end of the phase");
                    }
                    long due = phaseStart + (long) (Math.min((k + 1) * intervalS, minutes * 60) * 1e9);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                    double secs = (k + 1) * intervalS > minutes * 60 ? minutes * 60 - k * intervalS : intervalS;
                    long published = counter.published.get();
                    long written = writeLine.total();
                    Histogram claims = claimMicros.getIntervalHistogram();
                    Map<String, Long> stats = tableStats();
                    Interval iv = new Interval(phase, k + 1, Report.round((System.nanoTime() - t0) / 1e9, 1), k >= holdFrom,
                            Report.round((published - last[0]) / secs, 0), Report.round((written - last[1]) / secs, 0),
                            calibrationRows + written - published,
                            InboxOverhead.ms(claims.getValueAtPercentile(50)), InboxOverhead.ms(claims.getValueAtPercentile(99)),
                            claims.getTotalCount(), stats.get("dead"), stats.get("bytes"), stats.get("autovacuums"),
                            vacuumer.count.get() - last[2], Report.round((vacuumer.nanos.get() - last[3]) / 1e6, 1));
                    last[0] = published;
                    last[1] = written;
                    last[2] = vacuumer.count.get();
                    last[3] = vacuumer.nanos.get();
                    intervals.add(iv);
                    System.err.printf(Locale.ROOT, "sustained %s %d/%d%s: drain %,.0f/s, written %,.0f/s, backlog %,d,"
                                    + " claim p99 %.1f ms (%d claims), dead tuples %,d, table %.1f MB, autovacuums %d, bench vacuums %d%n",
                            phase, k + 1, n, iv.held() ? " (held)" : "", iv.drainPerSec(), iv.writePerSec(), iv.backlog(),
                            iv.claimP99Ms(), iv.claims(), iv.deadTuples(), iv.tableBytes() / 1e6, iv.autovacuums(),
                            iv.benchVacuums());
                }
                writing.join();
                Connection h = held.getAndSet(null);
                if (h != null) {
                    h.rollback();
                    h.close();
                    holdMarks[1] = (System.nanoTime() - start) / 1e9;
                }
            }
            long total = calibrationRows + writeLine.total();
            counter.target(total);
            try {
                counter.await(Duration.ofSeconds(60));
            } catch (IllegalStateException e) {
                log("relay did not catch up: %s", e.getMessage());
            }
            vacuumer.interrupt();
            vacuumer.join();
            relay.close();
            outboxLeft = RelayRun.outboxRows(env);
            figures(intervals, writeRate, calibrated, total, counter, outboxLeft);
            html(intervals, writeRate, calibrationEndS, phase2StartS, holdMarks, writeLine, pubLine, dest);
        }
    }

    private long phaseRows(double writeRate) {
        return (long) (writeRate * minutes * 60);
    }

    static boolean isClaim(String sql) {
        String s = sql.toLowerCase(Locale.ROOT);
        return s.startsWith("select") && s.contains("available_at") && s.contains("order by");
    }

    /** An open transaction with an xid and a snapshot: vacuum keeps every row deleted after it began. */
    private Connection holdTransaction() throws SQLException {
        Connection c = env.adminConnection();
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT txid_current()")) {
            rs.next();
        }
        return c;
    }

    private String setting(String name) throws SQLException {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT current_setting('" + name + "')")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** VACUUM of the outbox every few seconds on its own connection, as autovacuum would. */
    private final class Vacuumer extends Thread {
        final AtomicLong count = new AtomicLong();
        final AtomicLong nanos = new AtomicLong();
        private final double everyS;

        Vacuumer(double everyS) {
            super("sustained-vacuum");
            setDaemon(true);
            this.everyS = everyS;
        }

        @Override
        public void run() {
            try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
                while (!isInterrupted()) {
                    Thread.sleep((long) (everyS * 1000));
                    long t0 = System.nanoTime();
                    s.execute("VACUUM " + env.outboxTable());
                    nanos.addAndGet(System.nanoTime() - t0);
                    count.incrementAndGet();
                }
            } catch (InterruptedException e) {
                // the run is over
            } catch (SQLException e) {
                log("bench VACUUM failed: %s", e);
            }
        }
    }

    private Map<String, Long> tableStats() throws SQLException {
        Map<String, Long> m = new LinkedHashMap<>();
        try (Connection c = env.adminConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT n_dead_tup, pg_total_relation_size(relid), autovacuum_count"
                        + " FROM pg_stat_user_tables WHERE relid = '" + env.outboxTable() + "'::regclass")) {
            rs.next();
            m.put("dead", rs.getLong(1));
            m.put("bytes", rs.getLong(2));
            m.put("autovacuums", rs.getLong(3));
        }
        return m;
    }

    private void figures(List<Interval> intervals, double writeRate, double calibrated, long total, RelayCounter counter,
            long left) {
        List<Interval> free = intervals.stream().filter(i -> i.phase().equals("free")).toList();
        List<Interval> held = intervals.stream().filter(i -> i.phase().equals("held")).toList();
        double lastToFirst = ratio(free.get(free.size() - 1).drainPerSec(), free.get(0).drainPerSec());
        double lastToFirstHeld = ratio(held.get(held.size() - 1).drainPerSec(), held.get(0).drainPerSec());
        double claimGrowth = ratio(free.get(free.size() - 1).claimP99Ms(), free.get(0).claimP99Ms());
        double claimGrowthHeld = ratio(held.get(held.size() - 1).claimP99Ms(), held.get(0).claimP99Ms());
        report.figure("last_to_first", Report.round(lastToFirst, 3), "")
                .figure("last_to_first_held", Report.round(lastToFirstHeld, 3), "")
                .figure("claim_p99_last_to_first", Report.round(claimGrowth, 2), "")
                .figure("claim_p99_last_to_first_held", Report.round(claimGrowthHeld, 2), "")
                .figure("write_rate_target", Report.round(writeRate, 0), "rows/s")
                .figure("calibrated_drain_per_sec", Report.round(calibrated, 0), "msg/s")
                .figure("first_drain_per_sec", free.get(0).drainPerSec(), "msg/s")
                .figure("last_drain_per_sec", free.get(free.size() - 1).drainPerSec(), "msg/s")
                .figure("first_drain_per_sec_held", held.get(0).drainPerSec(), "msg/s")
                .figure("last_drain_per_sec_held", held.get(held.size() - 1).drainPerSec(), "msg/s")
                .figure("max_backlog", intervals.stream().mapToLong(Interval::backlog).max().orElse(0), "rows")
                .figure("max_dead_tuples", intervals.stream().mapToLong(Interval::deadTuples).max().orElse(0), "rows")
                .figure("max_table_mb", Report.round(intervals.stream().mapToLong(Interval::tableBytes).max().orElse(0) / 1e6, 1), "MB")
                .figure("rows", total, "rows")
                .figure("published_reported", counter.published.get(), "msgs")
                .figure("outbox_left", left, "rows")
                .figure("publish_failures", counter.failed.get(), "msgs")
                .detail("intervals", intervals)
                .target("last_to_first", ">=", 0.9)
                .target("last_to_first_held", ">=", 0.9)
                .target("claim_p99_last_to_first", "<=", 1.5)
                .target("claim_p99_last_to_first_held", "<=", 1.5)
                .target("outbox_left", "==", 0);
        report.note("the transaction is held for the last " + heldMinutes + " of the held phase's " + minutes + " minutes;"
                + " claim p99 is timed on the relay's connection (its SELECT ... ORDER BY id LIMIT ?)");
        System.out.println(table(intervals));
    }

    private static double ratio(double a, double b) {
        return b == 0 ? 0 : a / b;
    }

    private static String table(List<Interval> intervals) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "%-5s %3s %7s %5s %9s %9s %9s %9s %9s %11s %9s %4s %10s%n", "phase", "#", "end s", "held", "drain/s", "write/s",
                "backlog", "claim p50", "claim p99", "dead tuples", "table MB", "avac", "vacuum ms"));
        for (Interval i : intervals) {
            sb.append(String.format(Locale.ROOT, "%-5s %3d %7.1f %5s %9.0f %9.0f %9d %9.2f %9.2f %11d %9.1f %4d %10.0f%n",
                    i.phase(), i.index(), i.endS(), i.held() ? "yes" : "", i.drainPerSec(), i.writePerSec(), i.backlog(),
                    i.claimP50Ms(), i.claimP99Ms(), i.deadTuples(), i.tableBytes() / 1e6, i.autovacuums(), i.vacuumMs()));
        }
        return sb.toString();
    }

    private void html(List<Interval> intervals, double writeRate, double calibrationEndS, double phase2StartS,
            double[] holdMarks, Timeline writeLine, Timeline pubLine, Destination dest) {
        int n = intervals.size();
        double[] xs = new double[n];
        double[] drain = new double[n];
        double[] p99 = new double[n];
        double[] p50 = new double[n];
        double[] dead = new double[n];
        double[] mb = new double[n];
        for (int i = 0; i < n; i++) {
            Interval iv = intervals.get(i);
            xs[i] = iv.endS() + calibrationEndS;
            drain[i] = iv.drainPerSec();
            p99[i] = iv.claimP99Ms();
            p50[i] = iv.claimP50Ms();
            dead[i] = iv.deadTuples();
            mb[i] = iv.tableBytes() / 1e6;
        }
        List<Html.Mark> marks = new ArrayList<>(List.of(Html.Mark.x(calibrationEndS, "warm-up end"),
                Html.Mark.x(phase2StartS, "held phase")));
        if (holdMarks[0] > 0) {
            marks.add(Html.Mark.x(holdMarks[0], "transaction held"));
        }
        List<Html.Mark> rateMarks = new ArrayList<>(marks);
        rateMarks.add(Html.Mark.y(writeRate * 0.9, "target: 0.9 x rate"));
        html.paragraph(String.format(Locale.ROOT, "%s: writers at %,.0f rows/s (%d threads, %d rows per transaction) for %s min,"
                                + " then %s min more with a transaction held open for the last %s min. Before the first mark:"
                                + " the calibration drain, which is also the warm-up (not measured).", dest.describe(), writeRate,
                        writerThreads, txSize, fmt(minutes), fmt(minutes), fmt(heldMinutes)))
                .paragraph(minutes < 10 ? "Short run: " + fmt(minutes) + " min per phase (the default is 10); a trend over a few"
                        + " intervals says little." : "")
                .pre(table(intervals))
                .timeline("Rows per second published by the relay", "rows/s", List.of(pubLine.series(0)), rateMarks)
                .timeline("Rows per second written to the outbox", "rows/s", List.of(writeLine.series(0)), marks)
                .chart("Drain rate per interval", "seconds since start", "msg/s", List.of(new Html.Series("drain", xs, drain)),
                        null, rateMarks)
                .chart("Claim query latency per interval", "seconds since start", "ms",
                        List.of(new Html.Series("p99", xs, p99), new Html.Series("p50", xs, p50)), null, marks)
                .chart("Dead tuples in the outbox", "seconds since start", "rows", List.of(new Html.Series("n_dead_tup", xs, dead)),
                        null, marks)
                .chart("Outbox size (table + indexes + TOAST)", "seconds since start", "MB",
                        List.of(new Html.Series("pg_total_relation_size", xs, mb)), null, marks);
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
