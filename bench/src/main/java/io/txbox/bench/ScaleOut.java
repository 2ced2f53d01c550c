package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Lanes;
import io.txbox.outbox.Outbox;
import io.txbox.testkit.KeyOrder;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * scale-out: the same backlog of {@code --rows} drained by 1, 2 and 4 relay processes
 * ({@code --processes}), each a separate JVM ({@link RelayProcess}) with the relay's settings,
 * on one outbox, to a fresh Kafka topic per run. The clock runs from the moment every process
 * is ready and told to go until the last row is confirmed. With {@code --warmup-rows} (per
 * process), the processes first drain warm-up backlogs, up to {@code --warmup-rounds} of them
 * (fewer once JIT compilation is below a tenth of a round's relay CPU), and share the lanes out;
 * then the measured backlog commits in one transaction while they run, and the clock starts at
 * its commit: it measures warm JVMs (class loading and most JIT compilation paid before), not
 * start-up. Every JVM compiles the same code, so with a single short warm-up N processes paid N
 * times the compiler's work inside the timed window. The drain's CPU is split into the relay
 * JVMs (and of it their JIT and GC threads), the Kafka broker and the relays' database sessions,
 * and the outbox's index statistics say how many primary-key entries and table rows the claims
 * and deletes read per row.
 * The kill run starts cold, so its kill catches a process mid-drain. Every run is read back from Kafka:
 * per routing key the outbox ids must increase (a record older than one already seen for its
 * key, and not itself seen before, is an order violation; a record seen before is a duplicate,
 * which the inbox absorbs).
 *
 * <p>Then {@code --kill-processes} processes drain the same backlog again and one of them is
 * SIGKILLed once {@code --kill-at} of the rows are gone: the hand-over time is from the kill
 * until the rows of the lanes it held start to disappear again (its lanes' lease has to run
 * out first: {@code --lane-lease-s}).
 */
final class ScaleOut extends Scenario {
    /** Warm-up ends once JIT compilation takes at most this share of a round's relay CPU. */
    private static final double WARM_JIT_SHARE = 0.1;
    private long rows;
    private long warmupRows;
    private int maxWarmupRounds;
    /** Row numbers go on across runs: step keys stay unique and follow the outbox ids. */
    private long nextRow;
    private List<Integer> processes;
    private int killProcesses;
    private double killAt;
    private int payloadSize;
    private RelayRun relayRun;
    private Map<String, String> relayArgs;
    private long orderViolations = -1;
    private long lost = -1;

    /** One drain: processes, rate, what came back. */
    record Run(int processes, long rows, double seconds, double msgsPerSec, long lost, long duplicates,
            long orderViolations, Map<String, Long> publishedPerProcess, double relayCpuSeconds,
            Map<String, Object> perProcess, Map<String, Double> cpu, List<Map<String, Object>> warmupRounds,
            Map<String, Object> outboxReads) {}

    @Override
    void configure(Options o) {
        rows = o.longValue("rows", 200_000, "rows in the backlog of every run");
        warmupRows = o.longValue("warmup-rows", 20_000,
                "rows per process drained before each run's clock starts, so every JVM is warm (JIT-compiled); 0 = measure from a cold start");
        maxWarmupRounds = o.intValue("warmup-rounds", 4, "warm-up rounds of --warmup-rows per process at most; they stop"
                + " once a round's JIT compilation is below " + Math.round(WARM_JIT_SHARE * 100) + "% of the relay JVMs' CPU");
        processes = new ArrayList<>();
        for (String p : o.string("processes", "1,2,4", "relay process counts, one run each").split(",")) {
            try {
                processes.add(Integer.parseInt(p.trim()));
            } catch (NumberFormatException e) {
                throw new Options.UsageException("--processes wants counts like 1,2,4, but had '" + p + "'");
            }
        }
        killProcesses = o.intValue("kill-processes", 2, "processes of the kill run (one is SIGKILLed mid-drain); 0 = no kill run");
        killAt = o.doubleValue("kill-at", 0.3, "share of the backlog drained when the process is killed");
        payloadSize = o.intValue("payload", 400, "payload bytes per row");
        relayRun = new RelayRun(o);
        relayArgs = new LinkedHashMap<>();
        for (String name : List.of("workers", "batch", "poll-ms", "producer", "lane-lease-s", "strict-fencing")) {
            String v = o.parameters().get(name);
            if (v != null) {
                relayArgs.put(name, v);
            }
        }
        if (maxWarmupRounds < 1) {
            throw new Options.UsageException("--warmup-rounds must be 1 or more, but was " + maxWarmupRounds);
        }
        if (warmupRows < 0) {
            throw new Options.UsageException("--warmup-rows must be 0 or more, but was " + warmupRows);
        }
        if (processes.isEmpty() || processes.get(0) != 1) {
            throw new Options.UsageException("--processes must start with 1 (the ratios are against one process)");
        }
    }

    @Override
    boolean failedCorrectness() {
        return orderViolations != 0 || lost != 0;
    }

    /**
     * Analyzes the outbox once with rows in it, then empties it, before any relay starts: a running
     * system's outbox has column statistics. Analyzed only ever empty, it has none, and the
     * planner's defaults then claim a backlog by reading and sorting the whole table until the next
     * ANALYZE (autovacuum's, in production, within about a minute); the later vacuums of the empty
     * outbox keep these statistics.
     */
    private void seedStatistics(HikariDataSource writers, Outbox outbox, byte[] payload) throws Exception {
        long n = Math.max(1_000, Math.min(rows, 20_000));
        Backlog.fill(writers, outbox, "scale-seed", nextRow, n, 1, 1000, payload, 0, null);
        nextRow += n;
        RelayRun.vacuum(env);
        try (Connection c = env.adminConnection(); Statement st = c.createStatement()) {
            st.executeUpdate("DELETE FROM " + env.outboxTable());
        }
    }

    @Override
    void run() throws Exception {
        HikariDataSource writers = env.pool("writers", 2);
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        byte[] payload = payload(payloadSize);
        List<Run> runs = new ArrayList<>();
        List<Html.Series> lines = new ArrayList<>();
        seedStatistics(writers, outbox, payload);
        for (int p : processes) {
            runs.add(drain(p, writers, outbox, payload, lines, null));
        }
        Map<String, Object> kill = null;
        if (killProcesses > 1) {
            kill = new LinkedHashMap<>();
            runs.add(drain(killProcesses, writers, outbox, payload, lines, kill));
        }
        orderViolations = runs.stream().mapToLong(Run::orderViolations).sum();
        lost = runs.stream().mapToLong(Run::lost).sum();
        Run one = runs.get(0);
        for (Run r : runs.subList(0, processes.size())) {
            report.figure("msgs_per_sec_" + r.processes(), Report.round(r.msgsPerSec(), 0), "msg/s");
            report.figure("relay_cpu_s_" + r.processes(), r.relayCpuSeconds(), "s");
            if (!r.cpu().isEmpty()) {
                // where the machine's CPU went during the drain: the relays' JIT, the broker, the database sessions
                report.figure("relay_jit_s_" + r.processes(), r.cpu().get("relay_jit"), "s")
                        .figure("broker_cpu_s_" + r.processes(), r.cpu().get("kafka_broker"), "s")
                        .figure("db_cpu_s_" + r.processes(), r.cpu().get("relay_db_sessions"), "s");
            }
        }
        for (Run r : runs.subList(1, processes.size())) {
            report.figure("ratio_" + r.processes() + "_to_1", Report.round(r.msgsPerSec() / one.msgsPerSec(), 3), "");
        }
        report.figure("order_violations", orderViolations, "msgs")
                .figure("lost", lost, "msgs")
                .figure("duplicates_read_back", runs.stream().mapToLong(Run::duplicates).sum(), "msgs")
                .figure("rows", rows, "rows per run");
        if (kill != null) {
            report.figure("handover_s", kill.get("handover_s"), "s")
                    .figure("killed_lanes", kill.get("killed_lanes"), "lanes")
                    .figure("lane_lease_s", relayRun.laneLease.toSeconds(), "s")
                    .detail("kill", kill);
        }
        report.detail("runs", runs);
        int max = processes.get(processes.size() - 1);
        if (max > 1) {
            report.target("ratio_" + max + "_to_1", ">=", 0.9);
        }
        report.target("order_violations", "==", 0).target("lost", "==", 0);
        report.note((warmupRows > 0 ? String.format(Locale.ROOT, "warm JVMs: each run's processes first drain %,d rows per process,"
                + " up to %d times, and share the lanes out; the clock starts when the measured backlog commits, in one transaction",
                warmupRows, maxWarmupRounds)
                : "each process is a fresh JVM (no JIT warm-up)") + ", " + relayRun.workers + " workers, batch "
                + relayRun.batchSize + "; every run drains the same number of rows to its own topic");
        html(runs, lines, kill);
    }

    /**
     * Writes {@code rows}, drains them with {@code p} processes, reads them back; kills one when
     * {@code kill} is given. Adds the run's publish rate per second to {@code lines}.
     */
    private Run drain(int p, HikariDataSource writers, Outbox outbox, byte[] payload, List<Html.Series> lines,
            Map<String, Object> kill) throws Exception {
        try (Destination dest = Destination.create(Broker.KAFKA, env, "scale-" + p, relayRun.producer)) {
            freeLanes();
            List<Child> children = new ArrayList<>();
            try {
                for (int i = 0; i < p; i++) {
                    children.add(new Child("bench-scale-" + p + "-p" + i, dest.name));
                }
                for (Child c : children) {
                    c.awaitReady();
                }
                // one writer thread: outbox ids then follow the row numbers, which the order check reads
                // the kill run starts cold: warm processes drain a small backlog before the kill can catch one mid-drain
                boolean warm = kill == null && warmupRows > 0;
                long warmup = 0;
                List<Map<String, Object>> warmupRounds = new ArrayList<>();
                Timeline line;
                long t0;
                CpuAccount account = null;
                long[] scansBefore = null;
                String name = p + (p == 1 ? " process" : " processes") + (kill == null ? "" : ", one killed");
                List<ProcessHandle> jvms = children.stream().map(c -> c.process.toHandle()).toList();
                if (warm) {
                    for (Child c : children) {
                        c.go();
                    }
                    // rounds of --warmup-rows per process until the JIT compilers are (nearly) done: every JVM
                    // compiles the same code, so a clock that ran while they still compiled would charge N
                    // processes N times that work
                    double jitShare;
                    do {
                        for (Child c : children) {
                            c.measure(null);
                        }
                        CpuAccount round = CpuAccount.start(env, jvms, List.of());
                        long n = warmupRows * p;
                        Backlog.fill(writers, outbox, dest.name, nextRow, n, 1, 1000, payload, 0, null);
                        nextRow += n;
                        warmup += n;
                        awaitPublished(children, n);
                        awaitEmpty(Duration.ofSeconds(60));
                        double[] spent = round.since();
                        jitShare = spent[0] > 0 ? spent[3] / spent[0] : 0;
                        warmupRounds.add(Map.of("rows", n, "relay_cpu_s", Report.round(spent[0], 2),
                                "relay_jit_s", Report.round(spent[3], 2)));
                        log("%d process%s, warm-up round %d: %,d rows, relay CPU %.2f s, of which JIT compilation %.2f s",
                                p, p == 1 ? "" : "es", warmupRounds.size(), n, spent[0], spent[3]);
                    } while (jitShare > WARM_JIT_SHARE && warmupRounds.size() < maxWarmupRounds);
                    awaitLanesShared(children);
                    RelayRun.vacuum(env);
                    line = new Timeline(name, System.nanoTime());
                    for (Child c : children) {
                        c.measure(line);
                    }
                    // one transaction: the whole backlog becomes claimable at its commit, while the relays run
                    Backlog.fill(writers, outbox, dest.name, nextRow, rows, 1, (int) rows, payload, 0, null);
                    nextRow += rows;
                    t0 = System.nanoTime();
                    scansBefore = outboxScans();
                    // from the commit on: the relays' polls of the uncommitted backlog during the fill are not the drain's
                    account = CpuAccount.start(env, jvms, children.stream().map(c -> c.id).toList());
                } else {
                    Backlog.fill(writers, outbox, dest.name, nextRow, rows, 1, 1000, payload, 0, null);
                    nextRow += rows;
                    RelayRun.vacuum(env);
                    t0 = System.nanoTime();
                    line = new Timeline(name, t0);
                    for (Child c : children) {
                        c.measure(line);
                        c.go();
                    }
                }
                OrderCheck check = new OrderCheck();
                long end;
                if (kill == null) {
                    end = awaitPublished(children, rows);
                } else {
                    awaitPublished(children, (long) (rows * killAt));
                    killOne(children, kill);
                    end = awaitEmpty(Duration.ofSeconds(relayRun.laneLease.toSeconds() * 3 + 60));
                }
                double[] spent = account == null ? null : account.since();
                awaitEmpty(Duration.ofSeconds(60));
                Map<String, Object> scans = scansBefore == null ? Map.of() : scanned(scansBefore);
                double secs = (end - t0) / 1e9;
                lines.add(line.series(0));
                Map<String, Long> perProcess = new LinkedHashMap<>();
                Map<String, Object> detail = new LinkedHashMap<>();
                double cpu = 0;
                for (Child c : children) {
                    perProcess.put(c.id, c.published.get());
                    cpu += Math.max(0, c.cpuSeconds() - c.cpuBefore); // a killed process reads 0
                    // when each process confirmed its last row, and in how many batches: a straggler shows here
                    detail.put(c.id, Map.of("rows", c.published.get(), "batches", c.batches.get(),
                            "done_s", Report.round(Math.max(0, c.lastNanos - t0) / 1e9, 2)));
                }
                Map<String, Double> cpuSplit = new LinkedHashMap<>();
                if (spent != null) {
                    cpuSplit.put("relay_jvms", Report.round(spent[0], 2));
                    cpuSplit.put("relay_jit", Report.round(spent[3], 2));
                    cpuSplit.put("relay_gc", Report.round(spent[4], 2));
                    cpuSplit.put("kafka_broker", Report.round(spent[1], 2));
                    cpuSplit.put("relay_db_sessions", Report.round(spent[2], 2));
                }
                for (Child c : children) {
                    c.endInput();
                }
                for (Child c : children) {
                    c.awaitExit();
                }
                // the warm-up's rows went to the same topic: read back and checked with the measured ones
                KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), dest.name, null, warmup + rows,
                        Duration.ofSeconds(15), check::accept);
                Run r = new Run(p, rows, Report.round(secs, 2), rows / secs, back.lost(), back.duplicates(), check.violations(),
                        perProcess, Report.round(spent != null ? spent[0] : cpu, 1), detail, cpuSplit, warmupRounds, scans);
                log("%d process%s%s: %,d rows in %.2f s = %,.0f msg/s; lost %d, duplicates %d, order violations %d; per process %s;"
                                + " CPU of the relay JVMs during the drain %.1f s; CPU split %s; per process %s; outbox reads %s", p, p == 1 ? "" : "es",
                        kill == null ? "" : " (one killed)", rows, secs, r.msgsPerSec(), r.lost(), r.duplicates(),
                        r.orderViolations(), perProcess, r.relayCpuSeconds(), cpuSplit, detail, scans);
                return r;
            } finally {
                for (Child c : children) {
                    c.destroy();
                }
            }
        }
    }

    /**
     * The outbox's statistics: {primary key scans, index entries they read, rows they fetched from
     * the table, rows deleted}; {@code null} on MariaDB, which keeps no such counts.
     */
    private long[] outboxScans() throws SQLException {
        if (env.mariadb) {
            return null;
        }
        String sql = "SELECT i.idx_scan, i.idx_tup_read, i.idx_tup_fetch, t.n_tup_del, t.seq_scan, t.seq_tup_read,"
                + " (SELECT wal_bytes FROM pg_stat_wal)::bigint, (SELECT wal_fpi FROM pg_stat_wal) FROM pg_stat_user_indexes i"
                + " JOIN pg_stat_user_tables t ON t.relid = i.relid WHERE i.relid = ?::regclass AND i.indexrelname LIKE '%outbox_pk'";
        try (Connection c = env.adminConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, env.outboxTable());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                        rs.getLong(6), rs.getLong(7), rs.getLong(8)} : null;
            }
        }
    }

    /**
     * What the drain's claims read per row published: primary key entries and table rows visited
     * (a claim of a worker's lanes walks the rows of every other lane in between, and the rows
     * deleted but not yet vacuumed). The sessions report their counts about once a second, so this
     * waits until the drain's deletes are all counted (at most 10 s).
     */
    private Map<String, Object> scanned(long[] before) throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long[] now = outboxScans();
        while (now != null && now[3] - before[3] < rows && System.nanoTime() < deadline) {
            Thread.sleep(200);
            now = outboxScans();
        }
        if (now == null) {
            return Map.of();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("scans", now[0] - before[0]);
        m.put("index_entries_per_row", Report.round((now[1] - before[1]) / (double) rows, 2));
        m.put("table_rows_per_row", Report.round((now[2] - before[2]) / (double) rows, 2));
        m.put("deleted", now[3] - before[3]);
        m.put("seq_scans", now[4] - before[4]);
        m.put("seq_rows_per_row", Report.round((now[5] - before[5]) / (double) rows, 2));
        // the whole server's WAL meanwhile (other databases' work included)
        m.put("wal_bytes_per_row", Report.round((now[6] - before[6]) / (double) rows, 0));
        m.put("wal_full_page_images", now[7] - before[7]);
        return m;
    }

    /** Lanes left by an earlier run (a killed process's lease) would hold the next run back. */
    private void freeLanes() throws SQLException {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
            s.execute("UPDATE " + env.q(env.tables.relayLaneTable()) + " SET owner = NULL, lease_until = NULL");
            s.execute("DELETE FROM " + env.q(env.tables.relayMemberTable()));
        }
    }

    private static long awaitPublished(List<Child> children, long target) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (System.nanoTime() < deadline) {
            long sum = 0;
            for (Child c : children) {
                sum += c.published.get();
                if (!c.process.isAlive()) {
                    throw new IllegalStateException(c.id + " exited: " + c.logTail());
                }
            }
            if (sum >= target) {
                return System.nanoTime();
            }
            Thread.sleep(5);
        }
        throw new IllegalStateException("the relay processes did not publish " + target + " rows within 5 minutes");
    }

    /** Polls until the outbox is empty; returns when it was seen empty. */
    private long awaitEmpty(Duration timeout) throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
            while (System.nanoTime() < deadline) {
                try (ResultSet rs = s.executeQuery("SELECT id FROM " + env.outboxTable() + " ORDER BY id LIMIT 1")) {
                    if (!rs.next()) {
                        return System.nanoTime();
                    }
                }
                Thread.sleep(50);
            }
        }
        throw new IllegalStateException("outbox not empty after " + timeout.toSeconds() + " s");
    }

    /**
     * SIGKILLs the process holding the most lanes and measures how long until the rows of those
     * lanes are published again (their count in the outbox falls).
     */
    private void killOne(List<Child> children, Map<String, Object> kill) throws Exception {
        String lanes = env.q(env.tables.relayLaneTable());
        try (Connection c = env.adminConnection()) {
            Child victim = children.get(0);
            List<Short> held = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement("SELECT lane FROM " + lanes + " WHERE owner LIKE ? ORDER BY lane")) {
                for (Child candidate : children) {
                    List<Short> its = new ArrayList<>();
                    ps.setString(1, candidate.id + "-%");
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            its.add(rs.getShort(1));
                        }
                    }
                    if (its.size() > held.size()) {
                        victim = candidate;
                        held = its;
                    }
                }
            }
            long tKill = System.nanoTime();
            victim.process.destroyForcibly();
            victim.process.waitFor(10, TimeUnit.SECONDS);
            // lane numbers inline: both databases read an IN list (MariaDB has no arrays)
            String inList = held.isEmpty() ? "NULL" : held.stream().map(String::valueOf).collect(Collectors.joining(","));
            long before = -1;
            long handover = -1;
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + env.outboxTable() + " WHERE lane IN (" + inList + ")")) {
                long deadline = tKill + relayRun.laneLease.toNanos() * 3 + TimeUnit.SECONDS.toNanos(60);
                while (System.nanoTime() < deadline) {
                    long n;
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        n = rs.getLong(1);
                    }
                    if (before < 0) {
                        before = n;
                        if (n == 0) {
                            break; // nothing left in its lanes: no hand-over to see
                        }
                    } else if (n < before) {
                        handover = System.nanoTime();
                        break;
                    }
                    Thread.sleep(200);
                }
            }
            double s = handover < 0 ? -1 : Report.round((handover - tKill) / 1e9, 2);
            kill.put("victim", victim.id);
            kill.put("killed_lanes", held.size());
            kill.put("rows_in_killed_lanes", before);
            kill.put("handover_s", s);
            kill.put("killed_after_rows", victim.published.get());
            log("killed %s holding %d lanes (%,d rows left in them); its lanes published again after %.2f s (lane lease %d s)",
                    victim.id, held.size(), before, s, relayRun.laneLease.toSeconds());
        }
    }

    /**
     * Waits until the processes hold the 64 lanes evenly (each at least its share, rounded down),
     * as they do once their start-up look-agains are over; a run timed before that would measure
     * the split, not the drain.
     */
    private void awaitLanesShared(List<Child> children) throws SQLException, InterruptedException {
        int share = Lanes.COUNT / children.size();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String sql = "SELECT owner FROM " + env.q(env.tables.relayLaneTable()) + " WHERE lease_until > now()";
        Map<String, Integer> held = new HashMap<>();
        try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
            while (System.nanoTime() < deadline) {
                held.clear();
                try (ResultSet rs = s.executeQuery(sql)) {
                    while (rs.next()) {
                        String owner = rs.getString(1);
                        for (Child child : children) {
                            if (owner.startsWith(child.id + "-")) {
                                held.merge(child.id, 1, Integer::sum);
                            }
                        }
                    }
                }
                if (children.stream().allMatch(child -> held.getOrDefault(child.id, 0) >= share)) {
                    return;
                }
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("the relay processes did not share the lanes within 60 s: " + held);
    }

    /**
     * Per routing key, the rows read back must come in outbox order, as the testkit's
     * {@link KeyOrder} counts it: a record older than one already seen for its key, and not seen
     * itself before, was published out of order; a record seen before is a duplicate. One writer
     * thread wrote the rows in number order ({@code o<n>:relay}), so the numbers follow the ids.
     */
    private static final class OrderCheck {
        private final KeyOrder order = new KeyOrder();

        void accept(ConsumerRecord<byte[], byte[]> r) {
            String step = KafkaAdmin.stepKey(r);
            if (step == null || r.key() == null || !step.startsWith("o") || !step.endsWith(":" + Backlog.STEP)) {
                return;
            }
            long seq = Long.parseLong(step.substring(1, step.length() - Backlog.STEP.length() - 1));
            order.add(new String(r.key(), StandardCharsets.UTF_8), seq);
        }

        long violations() {
            return order.violationCount();
        }
    }

    /** A relay process: its input (GO, end of input), its P lines counted, its log in a temp file. */
    private final class Child {
        final String id;
        final Process process;
        final AtomicLong published = new AtomicLong();
        /** Confirmed batches since {@link #measure}, and when the last one came. */
        final AtomicLong batches = new AtomicLong();
        volatile long lastNanos;
        private final CountDownLatch ready = new CountDownLatch(1);
        private final OutputStream stdin;
        private final Path log;
        private volatile Timeline line;
        /** CPU seconds when the measured drain began: the run's figure is the CPU after it. */
        private double cpuBefore;

        Child(String id, String topic) throws IOException {
            this.id = id;
            this.log = Files.createTempFile("txbox-bench-" + id + "-", ".log");
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xms256m", "-Xmx512m"));
            // JVM options for the relay processes only (a profiler agent, a JIT log), space-separated
            String extra = System.getProperty("txbox.bench.relay-jvm-opts", "").trim();
            if (!extra.isEmpty()) {
                cmd.addAll(List.of(extra.split("\\s+")));
            }
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), RelayProcess.class.getName(),
                    "--jdbc-url=" + env.jdbcUrl, "--user=" + env.user, "--password=" + env.password, "--schema=" + env.schema,
                    "--bootstrap=" + env.kafkaBootstrap(), "--topic=" + topic, "--relay-id=" + id));
            relayArgs.forEach((k, v) -> cmd.add("--" + k + "=" + v));
            process = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
            stdin = process.getOutputStream();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String l;
                    while ((l = r.readLine()) != null) {
                        if (l.startsWith("P ")) {
                            long n = Long.parseLong(l.substring(2).trim());
                            published.addAndGet(n);
                            batches.incrementAndGet();
                            lastNanos = System.nanoTime();
                            Timeline t = line;
                            if (t != null) {
                                t.record(n);
                            }
                        } else if (l.equals("READY")) {
                            ready.countDown();
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // the process ended
                }
            }, id + "-out");
            reader.setDaemon(true);
            reader.start();
        }

        void awaitReady() throws InterruptedException {
            if (!ready.await(90, TimeUnit.SECONDS)) {
                throw new IllegalStateException(id + " not ready after 90 s: " + logTail());
            }
        }

        /** Starts the process's relay. */
        void go() throws IOException {
            send("GO");
        }

        /** From now on: rows published count from 0 into {@code publishLine}, and the CPU is the run's. */
        void measure(Timeline publishLine) {
            published.set(0);
            batches.set(0);
            cpuBefore = cpuSeconds();
            this.line = publishLine;
        }

        private void send(String command) throws IOException {
            stdin.write((command + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
        }

        /** CPU time of the JVM so far (0 once it is gone). */
        double cpuSeconds() {
            return process.info().totalCpuDuration().map(d -> d.toMillis() / 1000.0).orElse(0.0);
        }

        /** Ends the input: the relay closes (releasing its lanes) and the JVM exits. */
        void endInput() {
            try {
                stdin.close();
            } catch (IOException e) {
                // already gone (killed)
            }
        }

        void awaitExit() throws InterruptedException {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }

        void destroy() {
            if (process.isAlive()) {
                process.destroyForcibly();
            }
            try {
                Files.deleteIfExists(log);
            } catch (IOException e) {
                // a temp file left behind is harmless
            }
        }

        String logTail() {
            try {
                List<String> all = Files.readAllLines(log);
                return String.join("\n", all.subList(Math.max(0, all.size() - 30), all.size()));
            } catch (IOException e) {
                return "(no log: " + e + ")";
            }
        }
    }

    private void html(List<Run> runs, List<Html.Series> lines, Map<String, Object> kill) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%-10s %9s %9s %6s %11s %17s %10s%n", "processes",
                "msg/s", "seconds", "lost", "duplicates", "order violations", "relay CPU s"));
        for (Run r : runs) {
            sb.append(String.format(Locale.ROOT, "%-10s %9.0f %9.2f %6d %11d %17d %10.1f%n",
                    r.processes() + (runs.indexOf(r) >= processes.size() ? " (kill)" : ""), r.msgsPerSec(), r.seconds(), r.lost(),
                    r.duplicates(), r.orderViolations(), r.relayCpuSeconds()));
        }
        double one = runs.get(0).msgsPerSec();
        html.paragraph(String.format(Locale.ROOT, "%,d rows of %d B per run, drained to Kafka by 1 to %d relay processes"
                        + " (separate JVMs, %d workers each, batch %d) on one outbox; %s", rows, payloadSize,
                        processes.get(processes.size() - 1), relayRun.workers, relayRun.batchSize, warmupRows > 0
                                ? String.format(Locale.ROOT, "the same processes first drained %,d rows per process, up to %d times,"
                                        + " and shared the lanes out; the clock starts when the measured backlog commits (one transaction).",
                                        warmupRows, maxWarmupRounds)
                                : "each process starts cold (no warm-up: the clock starts when every process is ready)."))
                .paragraph(rows < 100_000 ? String.format(Locale.ROOT, "Short run: %,d rows per drain (the default is 200,000);"
                        + " start-up dominates.", rows) : "")
                .pre(sb.toString())
                .timeline("Rows per second published, one line per run (each from its own start)", "rows/s", lines,
                        List.of(Html.Mark.y(one, "1 process"), Html.Mark.y(one * 0.9, "target: 0.9 x 1 process")));
        if (kill != null) {
            html.paragraph(String.format(Locale.ROOT, "Kill run: %s SIGKILLed holding %s lanes; its lanes published again after"
                    + " %s s (lane lease %d s).", kill.get("victim"), kill.get("killed_lanes"), kill.get("handover_s"),
                    relayRun.laneLease.toSeconds()));
        }
    }
}
