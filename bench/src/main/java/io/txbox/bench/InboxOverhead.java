package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Receipt;
import io.txbox.outbox.Lanes;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Recorder;
import org.HdrHistogram.Histogram;

/**
 * inbox-overhead: what txbox costs on top of the same SQL written by hand. Each transaction is
 * an inbox receive, one business insert and one outbox send, on {@code --threads} threads
 * sharing one pool. The two sides alternate in rounds (ABBA order, so a drift in the machine's
 * load hits both alike); the ratio is the median over rounds of txbox / by hand.
 *
 * <p>The by-hand side runs the exact SQL text txbox prepares, captured from a recorded
 * transaction, with the same binds (the SHA-256 fingerprint included), on both databases: the
 * difference is what txbox does around the SQL, not a different query. With {@code --by-hand plain}
 * on MariaDB it is instead the least one could write there: a plain {@code INSERT} of the inbox row
 * (error 1062 = duplicate) and a plain {@code INSERT} of the outbox row's six head columns, so the
 * ratio also counts what txbox's statements do beyond that (the upsert that tells a retryable entry
 * and a reused key from a duplicate, its {@code RETURNING}, the savepoint, the outbox's other columns).
 */
final class InboxOverhead extends Scenario {
    private static final String CONSUMER = "bench-consumer";
    private static final String DESTINATION = "bench-orders";

    private int threads;
    private int rounds;
    private int seconds;
    private int warmup;
    private int payloadSize;
    private boolean noNotify;
    private boolean plain;

    private Inbox inbox;
    private Outbox outbox;
    private byte[] payload;
    private String inboxSql;
    /** txbox's receive, replayed by hand. */
    private InboxReplay replay;
    private String outboxSql;
    private final AtomicLong keys = new AtomicLong();
    private long runStart;
    private Timeline txboxLine;
    private Timeline handLine;
    // client CPU per transaction: what txbox adds in the JVM, independent of the machine's load
    private final AtomicLong txboxCpu = new AtomicLong();
    private final AtomicLong handCpu = new AtomicLong();
    private final AtomicLong txboxTxs = new AtomicLong();
    private final AtomicLong handTxs = new AtomicLong();

    @Override
    void configure(Options o) {
        threads = o.intValue("threads", 8, "threads on one pool");
        rounds = o.intValue("rounds", 5, "ABBA rounds");
        seconds = o.intValue("seconds", 10, "seconds per side and round");
        warmup = o.intValue("warmup", 5, "warm-up seconds");
        payloadSize = o.intValue("payload", 400, "payload bytes");
        noNotify = o.flag("no-notify", "txbox's outbox without its relay wake-up (notifyRelays(false)): on PostgreSQL"
                + " no pg_notify, which it otherwise runs at most once per 10 ms");
        String byHand = o.string("by-hand", "replay", "replay: the SQL captured from txbox; plain (MariaDB only): a bare"
                + " INSERT of the inbox row and of the outbox row's head columns");
        if (!byHand.equals("replay") && !byHand.equals("plain")) {
            throw new Options.UsageException("--by-hand must be replay or plain, but was " + byHand);
        }
        plain = byHand.equals("plain");
        if (threads < 1 || rounds < 1 || seconds < 1 || warmup < 0) {
            throw new Options.UsageException("--threads, --rounds and --seconds must be at least 1");
        }
    }

    @Override
    void run() throws Exception {
        HikariDataSource ds = env.pool("inbox-overhead", threads, false);
        inbox = Inbox.builder(CONSUMER).tables(env.tables).build();
        outbox = Outbox.builder().tables(env.tables).notifyRelays(!noNotify).build();
        payload = payload(payloadSize);
        captureSql(ds);
        if (plain) {
            if (!env.mariadb) {
                throw new Options.UsageException("--by-hand plain is for --db mariadb");
            }
            inboxSql = "INSERT INTO " + env.inboxTable() + " (consumer, message_key, status, fingerprint)"
                    + " VALUES (?, ?, 'COMPLETED', ?)";
            outboxSql = "INSERT INTO " + env.outboxTable() + " (step_key, original_key, destination, routing_key, lane,"
                    + " payload) VALUES (?, ?, ?, ?, ?, ?)";
        }

        runStart = System.nanoTime();
        txboxLine = new Timeline("txbox", runStart);
        handLine = new Timeline("by hand", runStart);
        if (warmup > 0) {
            log("warm-up: %d s per side", warmup);
            phase(ds, true, warmup, null, null);
            phase(ds, false, warmup, null, null);
        }
        Histogram txboxLatency = new Histogram(3);
        Histogram handLatency = new Histogram(3);
        double[] txboxRates = new double[rounds];
        double[] handRates = new double[rounds];
        double[] ratios = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            boolean txboxFirst = r % 2 == 0;
            for (int side = 0; side < 2; side++) {
                boolean txbox = (side == 0) == txboxFirst;
                double rate = phase(ds, txbox, seconds, txbox ? txboxLatency : handLatency, txbox ? txboxLine : handLine);
                if (txbox) {
                    txboxRates[r] = rate;
                } else {
                    handRates[r] = rate;
                }
            }
            // a side that completed nothing has no rate to compare: the ratio is 0, never a pass
            ratios[r] = handRates[r] > 0 ? txboxRates[r] / handRates[r] : 0;
            log("round %d/%d: txbox %.0f tx/s, by hand %.0f tx/s, ratio %.3f", r + 1, rounds, txboxRates[r], handRates[r],
                    ratios[r]);
        }
        double txboxMedian = median(txboxRates);
        double handMedian = median(handRates);
        double ratio = median(ratios);
        report.figure("txbox_tx_per_sec", Report.round(txboxMedian, 1), "tx/s")
                .figure("by_hand_tx_per_sec", Report.round(handMedian, 1), "tx/s")
                .figure("ratio", Report.round(ratio, 3), "")
                .figure("txbox_p50_ms", ms(txboxLatency.getValueAtPercentile(50)), "ms")
                .figure("txbox_p99_ms", ms(txboxLatency.getValueAtPercentile(99)), "ms")
                .figure("by_hand_p50_ms", ms(handLatency.getValueAtPercentile(50)), "ms")
                .figure("by_hand_p99_ms", ms(handLatency.getValueAtPercentile(99)), "ms")
                .figure("txbox_client_cpu_us_per_tx", Report.round(txboxCpu.get() / 1000.0 / Math.max(1, txboxTxs.get()), 1), "us")
                .figure("by_hand_client_cpu_us_per_tx", Report.round(handCpu.get() / 1000.0 / Math.max(1, handTxs.get()), 1), "us")
                .detail("txbox_rounds", round(txboxRates))
                .detail("by_hand_rounds", round(handRates))
                .detail("ratio_rounds", round(ratios, 3))
                .target("ratio", ">=", 0.90);
        verify(ds);

        html.paragraph(String.format("%d threads, %d rounds of %d s per side (ABBA), payload %d B. txbox %.0f tx/s,"
                        + " by hand %.0f tx/s, ratio %.3f.", threads, rounds, seconds, payloadSize, txboxMedian, handMedian, ratio))
                .timeline("Transactions per second", "tx/s", List.of(txboxLine.series(0), handLine.series(0)))
                .percentiles("Transaction latency (receive + insert + send + commit)", List.of("txbox", "by hand"),
                        List.of(txboxLatency, handLatency), 1000.0, "ms")
                .heading(plain ? "SQL per transaction by hand" : "SQL per transaction (captured from txbox, replayed by hand)")
                .pre(inboxSql + ";\n\nINSERT INTO business (message_key, amount) VALUES (?, ?);\n\n" + outboxSql + ";");
    }

    /**
     * Runs one recorded txbox transaction and keeps the SQL it prepared, for the by-hand side. One
     * unrecorded transaction goes first, so the first call's dialect detection (a
     * {@code SELECT VERSION()} on MariaDB) is not counted as per-transaction work.
     */
    private void captureSql(HikariDataSource ds) throws SQLException {
        SqlRecorder rec = new SqlRecorder();
        try (Connection c = ds.getConnection()) {
            txboxTx(c, "capture-warm-" + System.nanoTime());
            Connection wrapped = rec.wrap(c);
            txboxTx(wrapped, "capture-" + System.nanoTime());
        }
        List<String> sql = rec.prepared;
        replay = InboxReplay.of(env, sql);
        inboxSql = replay.sql;
        outboxSql = sql.stream().filter(s -> s.contains(env.tables.outboxTable())).findFirst()
                .orElseThrow(() -> new IllegalStateException("txbox prepared no outbox statement: " + sql));
        report.detail("by_hand", plain ? "plain" : "replay");
        report.detail("txbox_statements_per_tx", sql.size());
        report.detail("txbox_round_trips_per_tx", rec.roundTrips());
        log("txbox transaction: %d statements, %d round trips (executes + commit)", sql.size(), rec.roundTrips());
    }

    private void txboxTx(Connection c, String key) throws SQLException {
        Receipt receipt = inbox.receive(c, InboundMessage.of(key, payload));
        if (receipt.isFirst()) {
            insertBusiness(c, key);
            outbox.send(c, OutboxMessage.builder(StepKey.of(key, "ship"), DESTINATION).routingKey(key).payload(payload).build());
        }
        c.commit();
    }

    private void handTx(Connection c, String key, MessageDigest sha) throws SQLException {
        if (plain) {
            handTxPlain(c, key, sha);
            return;
        }
        if (replay.receive(c, CONSUMER, key, sha.digest(payload))) {
            insertBusiness(c, key);
            sendByHand(c, key);
        }
        c.commit();
    }

    /** txbox's outbox insert, bound as txbox binds it on each database. */
    private void sendByHand(Connection c, String key) throws SQLException {
        // after the head: headers (names, values), content type, trace parent, trace state, due time; then the delay
        int[] nulls = env.mariadb
                ? new int[] {Types.VARCHAR, Types.VARCHAR, Types.VARCHAR, Types.VARCHAR, Types.VARCHAR, Types.DECIMAL}
                : new int[] {Types.ARRAY, Types.ARRAY, Types.VARCHAR, Types.VARCHAR, Types.VARCHAR,
                        Types.TIMESTAMP_WITH_TIMEZONE};
        try (PreparedStatement ps = c.prepareStatement(outboxSql)) {
            bindOutboxHead(ps, key);
            for (int i = 0; i < nulls.length; i++) {
                ps.setNull(7 + i, nulls[i]);
            }
            ps.setLong(13, 0);
            if (!env.mariadb) {
                ps.setLong(14, 0); // PostgreSQL's insert binds the delay twice
            }
            ps.executeUpdate();
        }
    }

    /** The columns both databases' by-hand outbox inserts start with: step key, original, destination, routing key, lane, payload. */
    private void bindOutboxHead(PreparedStatement ps, String key) throws SQLException {
        String stepKey = key + ":ship";
        ps.setString(1, stepKey);
        ps.setString(2, key);
        ps.setString(3, DESTINATION);
        ps.setString(4, key);
        ps.setShort(5, Lanes.of(key, stepKey));
        ps.setBytes(6, payload);
    }

    /** {@code --by-hand plain} on MariaDB: a duplicate key is error 1062 on the inbox insert. */
    private void handTxPlain(Connection c, String key, MessageDigest sha) throws SQLException {
        boolean first = true;
        try (PreparedStatement ps = c.prepareStatement(inboxSql)) {
            ps.setString(1, CONSUMER);
            ps.setString(2, key);
            ps.setBytes(3, sha.digest(payload));
            ps.executeUpdate();
        } catch (SQLException e) {
            if (e.getErrorCode() != 1062) {
                throw e;
            }
            first = false;
        }
        if (first) {
            insertBusiness(c, key);
            try (PreparedStatement ps = c.prepareStatement(outboxSql)) {
                bindOutboxHead(ps, key);
                ps.executeUpdate();
            }
        }
        c.commit();
    }

    private static void insertBusiness(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO business (message_key, amount) VALUES (?, ?)")) {
            ps.setString(1, key);
            ps.setLong(2, 42);
            ps.executeUpdate();
        }
    }

    /** One side for {@code secs} seconds on every thread; returns its transactions per second. */
    private double phase(HikariDataSource ds, boolean txbox, int secs, Histogram latency, Timeline line) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        AtomicLong done = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        Recorder recorder = new Recorder(3);
        long[] window = new long[2];
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        AtomicLong cpuNanos = new AtomicLong();
        List<Thread> workers = new ArrayList<>();
        String side = txbox ? "t" : "h";
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                MessageDigest sha = sha256();
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                long end = window[1];
                long cpu0 = mx.getCurrentThreadCpuTime();
                while (System.nanoTime() < end) {
                    String key = side + "-" + keys.incrementAndGet();
                    long t0 = System.nanoTime();
                    try (Connection c = ds.getConnection()) {
                        try {
                            if (txbox) {
                                txboxTx(c, key);
                            } else {
                                handTx(c, key, sha);
                            }
                        } catch (SQLException | RuntimeException e) {
                            c.rollback();
                            throw e;
                        }
                    } catch (SQLException | RuntimeException e) {
                        if (errors.incrementAndGet() <= 3) {
                            System.err.println("transaction failed: " + e);
                        }
                        continue;
                    }
                    long t1 = System.nanoTime();
                    if (t1 <= end) {
                        done.incrementAndGet();
                        recorder.recordValue((t1 - t0) / 1000);
                        if (line != null) {
                            line.record(1);
                        }
                    }
                }
                cpuNanos.addAndGet(mx.getCurrentThreadCpuTime() - cpu0);
            }, "overhead-" + side + t);
            th.start();
            workers.add(th);
        }
        window[0] = System.nanoTime();
        window[1] = window[0] + secs * 1_000_000_000L;
        start.countDown();
        for (Thread th : workers) {
            th.join();
        }
        if (errors.get() > 0) {
            report.note((txbox ? "txbox" : "by hand") + ": " + errors.get() + " failed transactions");
        }
        if (latency != null) {
            latency.add(recorder.getIntervalHistogram());
            (txbox ? txboxCpu : handCpu).addAndGet(cpuNanos.get());
            (txbox ? txboxTxs : handTxs).addAndGet(done.get());
        }
        return done.get() / (double) secs;
    }

    /** Every committed transaction left one inbox row, one business row and one outbox row. */
    private void verify(HikariDataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); var s = c.createStatement()) {
            long inboxRows = count(s, "SELECT count(*) FROM " + env.inboxTable());
            long business = count(s, "SELECT count(*) FROM business");
            long outboxRows = count(s, "SELECT count(*) FROM " + env.outboxTable());
            c.commit();
            report.detail("rows", java.util.Map.of("inbox", inboxRows, "business", business, "outbox", outboxRows));
            if (inboxRows != business || business != outboxRows) {
                report.note("row counts differ: inbox " + inboxRows + ", business " + business + ", outbox " + outboxRows);
            }
        }
    }

    private static long count(java.sql.Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    private static double[] round(double[] v) {
        return round(v, 1);
    }

    private static double[] round(double[] v, int digits) {
        double[] r = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            r[i] = Report.round(v[i], digits);
        }
        return r;
    }

    static double ms(long micros) {
        return Report.round(micros / 1000.0, 2);
    }
}
