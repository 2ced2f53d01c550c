package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Relay;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * e2e-latency: from the commit of an outbox send to the commit of the receiving inbox
 * transaction, at a fixed rate ({@code --rate}, default 1,000 msg/s, for {@code --seconds},
 * default 60, after {@code --warmup} seconds, default 15, that are not counted). Sender, relay (woken by the
 * send) and consumers share this JVM, so both ends read the same {@link System#nanoTime} clock.
 *
 * <p>The send schedule is fixed in advance and latency is measured from the actual commit, so a
 * slow sender shows up as a lower achieved rate (reported), not as hidden queueing.
 */
final class E2eLatency extends Scenario {
    private double rate;
    private int seconds;
    private int warmup;
    private int senders;
    private int consumers;
    private int payloadSize;
    private String consumerKind;
    private int consumerBatch;
    private RelayRun relayRun;
    private long lost = -1;
    private long doubled = -1;
    private int noise;
    private boolean traceSql;
    private boolean relayProcess;

    @Override
    void configure(Options o) {
        rate = o.doubleValue("rate", 1000, "messages per second");
        seconds = o.intValue("seconds", 60, "measured seconds");
        // 15 s: a new relay reshuffles its lanes between its workers about 5 s after it starts,
        // and released lanes wait up to another 5 s for their new owner (see PERFORMANCE.md);
        // the measured window starts after that, at steady state
        warmup = o.intValue("warmup", 15, "seconds before the measured window");
        senders = o.intValue("senders", 4, "sending threads");
        consumers = o.intValue("consumers", 4, "consumer threads");
        payloadSize = o.intValue("payload", 400, "payload bytes");
        consumerKind = o.string("consumer", "library", "library (txbox KafkaInboxConsumer) or plain");
        consumerBatch = o.intValue("consumer-batch", 1,
                "library consumers' batchSize: up to this many records of one poll share a transaction");
        noise = o.intValue("noise", 0, "processes the scenario starts, each spinning one core, for a loaded machine on demand");
        traceSql = o.flag("trace-sql", "count and time every relay and receiver statement and print the tables");
        if (!consumerKind.equals("library") && !consumerKind.equals("plain")) {
            throw new Options.UsageException("--consumer must be library (txbox's KafkaInboxConsumer) or plain, but was '"
                    + consumerKind + "'");
        }
        String relay = o.string("relay", "in-process", "in-process, or process: also the standalone relay jar in its own"
                + " JVM with its defaults, measured after the in-process relay in the same run");
        if (!relay.equals("in-process") && !relay.equals("process")) {
            throw new Options.UsageException("--relay must be in-process or process, but was '" + relay + "'");
        }
        relayProcess = relay.equals("process");
        relayRun = new RelayRun(o);
        if (consumerBatch < 1) {
            throw new Options.UsageException("--consumer-batch must be 1 or more records, but was " + consumerBatch);
        }
        if (noise < 0) {
            throw new Options.UsageException("--noise must be 0 or more spinning processes, but was " + noise);
        }
        if (rate <= 0 || seconds < 1) {
            throw new Options.UsageException("--rate and --seconds must be positive");
        }
    }

    @Override
    boolean failedCorrectness() {
        return lost != 0 || doubled != 0;
    }

    /** Business rows the receivers committed: {all rows, distinct message keys}. */
    static long[] businessRows(BenchEnv env) throws SQLException {
        try (Connection c = env.adminConnection(); java.sql.Statement s = c.createStatement();
                java.sql.ResultSet rs = s.executeQuery("SELECT count(*), count(DISTINCT message_key) FROM "
                        + env.businessTable())) {
            rs.next();
            return new long[] {rs.getLong(1), rs.getLong(2)};
        }
    }

    @Override
    void run() throws Exception {
        List<Process> spinners = new ArrayList<>();
        try {
            for (int i = 0; i < noise; i++) {
                // one busy core each, so a loaded machine is reproducible; ended by handle in finally
                spinners.add(new ProcessBuilder("sh", "-c", "while :; do :; done").start());
            }
            if (noise > 0) {
                log("noise: %d spinning process(es) started", noise);
            }
            measure();
        } finally {
            for (Process p : spinners) {
                p.destroyForcibly().waitFor();
            }
        }
    }

    private void measure() throws Exception {
        HikariDataSource sendDs = env.pool("senders", senders, false);
        SqlTiming relaySql = traceSql ? new SqlTiming() : null;
        SqlTiming recvSql = traceSql ? new SqlTiming() : null;
        javax.sql.DataSource relayDs = traced(relaySql, env.pool("relay", relayRun.poolSize()));
        HikariDataSource recvPool = env.pool("receivers", consumers, false);
        javax.sql.DataSource recvDs = traced(recvSql, recvPool);
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        Inbox inbox = Inbox.builder("bench-receiver").tables(env.tables).build();
        byte[] payload = payload(payloadSize);
        int total = (int) Math.round(rate * (warmup + seconds));
        int firstMeasured = (int) Math.round(rate * warmup);

        // per message: the send commit time, then the latency once the receiver committed
        Meeting meet = new Meeting();
        Recorder latency = new Recorder(3);
        long start = System.nanoTime();
        Timeline sentLine = new Timeline("sent", start);
        Timeline recvLine = new Timeline("received", start);
        AtomicLongArray maxPerSecond = new AtomicLongArray(warmup + seconds + 120);
        AtomicLong measured = new AtomicLong();

        Stages.reset();
        Map<String, String> relayProducer = new HashMap<>(relayRun.producer);
        relayProducer.put("interceptor.classes", Stages.Published.class.getName());
        try (Destination dest = Destination.create(Broker.KAFKA, env, "e2e", relayProducer)) {
            log("%s; %,.0f msg/s for %d s after %d s warm-up; %d senders, %d consumers", dest.describe(), rate, seconds,
                    warmup, senders, consumers);
            RelayCounter counter = new RelayCounter(null);
            Relay relay = relayRun.build(relayDs, env, dest, counter, outbox, "bench-e2e");
            relay.start();
            InboxConsumer.OnCommit onCommit = (key, first, nanos) -> {
                if (!first) {
                    return;
                }
                recvLine.record(1);
                long sent = meet.arrive(key, false, nanos);
                if (sent != 0) {
                    record(key, nanos - sent, firstMeasured, latency, measured, maxPerSecond, start);
                    Stages.arrived(Stages.TXBOX, key, index(key) >= firstMeasured, sent, nanos);
                }
            };
            try (Receivers consumer = consumerKind.equals("plain")
                    ? Receivers.plain(env.kafkaBootstrap(), dest.name, consumers, recvDs, inbox, onCommit)
                    : Receivers.library(env.kafkaBootstrap(), dest.name, consumers, consumerBatch, recvDs, inbox, onCommit)) {
                AtomicLong sendErrors = new AtomicLong();
                List<CpuAccount> cpu = cpuStart("senders", "relay", "receivers");
                Paced paced = paced(total, i -> {
                    String key = "e" + i;
                    OutboxMessage m = OutboxMessage.builder(StepKey.of(key, "e2e"), dest.name)
                            .routingKey(key).payload(payload).build();
                    try (Connection c = sendDs.getConnection()) {
                        outbox.send(c, m);
                        c.commit();
                    } catch (SQLException | RuntimeException e) {
                        sendErrors.incrementAndGet();
                        return;
                    }
                    long committed = System.nanoTime();
                    sentLine.record(1);
                    String stepKey = m.stepKey().value();
                    long recv = meet.arrive(stepKey, true, committed);
                    if (recv != 0) {
                        record(stepKey, recv - committed, firstMeasured, latency, measured, maxPerSecond, start);
                        Stages.arrived(Stages.TXBOX, stepKey, index(stepKey) >= firstMeasured, committed, recv);
                    }
                });
                AtomicLong late = new AtomicLong(paced.late());
                double sendSecs = paced.seconds();
                long expected = total - sendErrors.get();
                // lost and doubled are counted in the business table the receivers write in the
                // inbox transaction, not from the receivers' own callbacks
                long waitEnd = System.nanoTime() + 30_000_000_000L;
                long[] applied = businessRows(env);
                while (applied[1] < expected && System.nanoTime() < waitEnd) {
                    Thread.sleep(100);
                    applied = businessRows(env);
                }
                lost = expected - applied[1];
                doubled = applied[0] - applied[1];
                double[] txboxCpu = cpuSeconds(cpu);
                relay.close();
                Histogram h = latency.getIntervalHistogram();
                log("txbox: p50 %.2f ms, p99 %.2f ms; now the bare pipeline at the same rate", ms(h.getValueAtPercentile(50)),
                        ms(h.getValueAtPercentile(99)));
                if (traceSql) {
                    report.detail("relay_sql", relaySql.summary()).detail("receiver_sql", recvSql.summary());
                    report.note("traced run (--trace-sql): relay and receiver statements per SQL text follow");
                    System.out.print("relay (" + (warmup + seconds) + " s, warm-up included):\n" + relaySql.table()
                            + "receivers:\n" + recvSql.table());
                }
                if (relayProcess) {
                    processFigures(ProcessPass.run(this, env, sendDs, recvDs, inbox, payload, total, firstMeasured,
                            consumers, consumerBatch));
                }
                double[] bareCpu = new double[3];
                Histogram bare = bare(recvPool, payload, bareCpu);
                double ratio = bare.getValueAtPercentile(99) == 0 ? 0
                        : (double) h.getValueAtPercentile(99) / bare.getValueAtPercentile(99);
                report.figure("p50_ms", ms(h.getValueAtPercentile(50)), "ms")
                        .figure("p99_ms", ms(h.getValueAtPercentile(99)), "ms")
                        .figure("p999_ms", ms(h.getValueAtPercentile(99.9)), "ms")
                        .figure("max_ms", ms(h.getMaxValue()), "ms")
                        .figure("bare_p50_ms", ms(bare.getValueAtPercentile(50)), "ms")
                        .figure("bare_p99_ms", ms(bare.getValueAtPercentile(99)), "ms")
                        .figure("bare_measured", bare.getTotalCount(), "msgs")
                        .figure("p99_ratio_to_bare", Report.round(ratio, 2), "")
                        .figure("noise_processes", noise, "")
                        .figure("mean_ms", Report.round(h.getMean() / 1000.0, 2), "ms")
                        .figure("measured", h.getTotalCount(), "msgs")
                        .figure("achieved_rate", Report.round(total / sendSecs, 1), "msg/s")
                        .figure("late_sends", late.get(), "msgs")
                        .figure("send_errors", sendErrors.get(), "msgs")
                        .figure("lost", lost, "msgs")
                        .figure("doubled", doubled, "msgs")
                        .figure("duplicates_absorbed", consumer.duplicates(), "msgs");
                stageFigures();
                cpuFigures("cpu_", new String[] {"jvm", "broker", "db_senders", "db_relay", "db_receivers"}, txboxCpu, total);
                cpuFigures("bare_cpu_", new String[] {"jvm", "broker", "db_receivers"}, bareCpu,
                        (int) Math.round(rate * (Math.min(warmup, 5) + seconds)));
                report
                        .target("p99_ms", "<=", 25)
                        .target("p99_ratio_to_bare", "<=", 2)
                        .target("lost", "==", 0)
                        .target("doubled", "==", 0);
                report.note("lost: sent messages with no business row; doubled: business rows beyond one per message");
                report.note("late_sends: sends that started more than 10 ms after their slot (sender or pool saturated)");
                if (bare.getTotalCount() < h.getTotalCount()) {
                    report.note(String.format("bare pipeline: only %,d of %,d measured messages arrived within 30 s of the last"
                            + " send; its p99 counts only those that did, so it understates the bare tail:"
                            + " both pipelines are saturated", bare.getTotalCount(), h.getTotalCount()));
                }
                report.note("cpu_*_ms_per_msg: CPU per message sent, from the first send until the last receive commit"
                        + " (warm-up included): this JVM (senders, relay, receivers; bare: producer, consumers), the broker"
                        + " (a child process; with --noise the spinning processes count here too), the database sessions of each pool");
                report.note("bare: KafkaProducer with the relay's settings -> plain consumer: business insert, commit, offsets;"
                        + " send call -> database commit, same rate, same run, after txbox's window");
                double[] xs = new double[maxPerSecond.length()];
                double[] ys = new double[xs.length];
                int last = 0;
                for (int i = 0; i < xs.length; i++) {
                    xs[i] = i;
                    ys[i] = maxPerSecond.get(i) / 1000.0;
                    if (ys[i] > 0) {
                        last = i;
                    }
                }
                html.paragraph(String.format("%,.0f msg/s for %d s (+%d s warm-up), Kafka, %d senders, %d " + consumerKind + " consumers:"
                                + " p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms.", rate, seconds, warmup, senders,
                                consumers, ms(h.getValueAtPercentile(50)), ms(h.getValueAtPercentile(99)),
                                ms(h.getValueAtPercentile(99.9)), ms(h.getMaxValue())))
                        .paragraph(seconds < 60 ? String.format("Short run: %d s measured (the default is 60 s); its tail"
                                + " percentiles rest on %,d samples.", seconds, h.getTotalCount()) : "")
                        .percentiles("Send commit to receive commit (bare: send call to receive commit)",
                                List.of("txbox", "bare"), List.of(h, bare), 1000.0, "ms", List.of(Html.Mark.y(25, "p99 target 25 ms")))
                        .timeline("Messages per second", "msg/s", List.of(sentLine.series(0), recvLine.series(0)),
                                List.of(Html.Mark.x(warmup, "end of warm-up")))
                        .timeline("Highest latency per second", "ms", List.of(new Html.Series("max latency",
                                java.util.Arrays.copyOf(xs, last + 1), java.util.Arrays.copyOf(ys, last + 1))),
                                List.of(Html.Mark.x(warmup, "end of warm-up"), Html.Mark.y(25, "p99 target")));
            }
        }
    }

    private void processFigures(ProcessPass.Result p) {
        Histogram h = p.latency();
        log("relay process: p50 %.2f ms, p99 %.2f ms, lost %d, doubled %d", ms(h.getValueAtPercentile(50)),
                ms(h.getValueAtPercentile(99)), p.lost(), p.doubled());
        lost = lost + p.lost();
        doubled = doubled + p.doubled();
        report.figure("process_p50_ms", ms(h.getValueAtPercentile(50)), "ms")
                .figure("process_p99_ms", ms(h.getValueAtPercentile(99)), "ms")
                .figure("process_max_ms", ms(h.getMaxValue()), "ms")
                .figure("process_measured", h.getTotalCount(), "msgs")
                .figure("process_ready_ms", Report.round(p.readyMs(), 0), "ms")
                .figure("process_send_errors", p.sendErrors(), "msgs")
                .figure("process_lost", p.lost(), "msgs")
                .figure("process_doubled", p.doubled(), "msgs")
                .target("process_p50_ms", "<=", 10)
                .target("process_p99_ms", "<=", 50);
        report.note("process_*: the standalone relay jar in its own JVM with its defaults (woken by the senders'"
                + " NOTIFY on PostgreSQL, txbox.relay.listen),"
                + " the same schedule and receivers, after the in-process pass");
    }

    /**
     * p50 / p99 of each stage of the measured messages (the stages of one message need not add
     * up to its latency's percentile): where the tail queues; the bare pipeline's as {@code bare_stage_*}.
     */
    private void stageFigures() {
        for (int pipeline : new int[] {Stages.TXBOX, Stages.BARE}) {
            String prefix = pipeline == Stages.TXBOX ? "stage_" : "bare_stage_";
            StringBuilder line = new StringBuilder((pipeline == Stages.TXBOX ? "txbox" : "bare") + " stages p50 / p99 ms:");
            // the bare producer's send call is where its pipeline starts: no first stage
            for (int i = pipeline == Stages.TXBOX ? 0 : 1; i < Stages.NAMES.length; i++) {
                Histogram h = Stages.histogram(pipeline, i);
                if (h.getTotalCount() == 0) {
                    continue;
                }
                report.figure(prefix + Stages.NAMES[i] + "_p50_ms", ms(h.getValueAtPercentile(50)), "ms")
                        .figure(prefix + Stages.NAMES[i] + "_p99_ms", ms(h.getValueAtPercentile(99)), "ms");
                line.append(String.format(" %s %.2f / %.2f;", Stages.NAMES[i], ms(h.getValueAtPercentile(50)),
                        ms(h.getValueAtPercentile(99))));
            }
            log("%s", line);
        }
    }

    private List<CpuAccount> cpuStart(String... pools) throws SQLException {
        List<CpuAccount> out = new ArrayList<>();
        for (String pool : pools) {
            out.add(CpuAccount.start(env, pool));
        }
        return out;
    }

    /** {this JVM, the broker, then each pool's database sessions} in CPU seconds since {@link #cpuStart}. */
    private static double[] cpuSeconds(List<CpuAccount> cpu) {
        double[] first = cpu.get(0).since();
        double[] out = new double[2 + cpu.size()];
        out[0] = first[0];
        out[1] = first[1];
        for (int i = 0; i < cpu.size(); i++) {
            out[2 + i] = cpu.get(i).since()[2];
        }
        return out;
    }

    private void cpuFigures(String prefix, String[] parts, double[] seconds, int messages) {
        double sum = 0;
        for (int i = 0; i < parts.length; i++) {
            report.figure(prefix + parts[i] + "_ms_per_msg", Report.round(seconds[i] * 1000 / messages, 3), "ms");
            sum += seconds[i];
        }
        report.figure(prefix + "ms_per_msg", Report.round(sum * 1000 / messages, 3), "ms");
    }

    private static javax.sql.DataSource traced(SqlTiming timing, HikariDataSource pool) {
        return timing == null ? pool : timing.wrap(pool);
    }

    /** How a paced send loop went: sends that started over 10 ms after their slot, and its length. */
    record Paced(long late, double seconds) {}

    /** Calls {@code send} with 0 .. total-1 on the sender threads, message i due at start + i / rate. */
    Paced paced(int total, LongConsumer send) throws InterruptedException {
        long t0 = System.nanoTime() + 50_000_000L;
        AtomicLong next = new AtomicLong();
        AtomicLong late = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int s = 0; s < senders; s++) {
            Thread th = new Thread(() -> {
                while (true) {
                    long i = next.getAndIncrement();
                    if (i >= total) {
                        return;
                    }
                    long due = t0 + (long) (i / rate * 1e9);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    } else if (wait < -10_000_000L) {
                        late.incrementAndGet();
                    }
                    send.accept(i);
                }
            }, "sender-" + s);
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
        return new Paced(late.get(), (System.nanoTime() - t0) / 1e9);
    }

    /**
     * The bare pipeline at the same rate: a producer with the relay's settings sends each message
     * at once (no outbox, no relay); the bench's plain consumer inserts the business row, commits,
     * then commits the offsets (no inbox). Latency: send call to database commit. A warm-up of at
     * most 5 s, then the same measured seconds.
     */
    private Histogram bare(HikariDataSource recvDs, byte[] payload, double[] cpuOut) throws Exception {
        String topic = "bench-e2e-bare-" + Long.toString(java.util.concurrent.ThreadLocalRandom.current().nextLong(1L << 30, 1L << 31), 36);
        env.createTopic(topic, 4);
        int bareWarmup = Math.min(warmup, 5);
        int total = (int) Math.round(rate * (bareWarmup + seconds));
        int firstMeasured = (int) Math.round(rate * bareWarmup);
        Meeting meet = new Meeting();
        Recorder latency = new Recorder(3);
        AtomicLong measured = new AtomicLong();
        long start = System.nanoTime();
        AtomicLongArray maxPerSecond = new AtomicLongArray(bareWarmup + seconds + 120);
        InboxConsumer consumer = new InboxConsumer(env.kafkaBootstrap(), topic, 4, consumers, recvDs, null, true, (key, first, nanos) -> {
            long sent = meet.arrive(key, false, nanos);
            if (sent != 0) {
                record(key, nanos - sent, firstMeasured, latency, measured, maxPerSecond, start);
                Stages.arrived(Stages.BARE, key, index(key) >= firstMeasured, sent, nanos);
            }
        });
        try {
            consumer.awaitAssigned(Duration.ofSeconds(30));
            List<CpuAccount> cpu = cpuStart("receivers");
            Map<String, String> bareProducer = new HashMap<>(relayRun.producer);
            bareProducer.put("interceptor.classes", Stages.Published.class.getName());
            try (KafkaProducer<byte[], byte[]> producer = Bare.producer(env.kafkaBootstrap(), bareProducer)) {
                producer.partitionsFor(topic);
                paced(total, i -> {
                    String key = "b" + i + ":bare";
                    byte[] k = key.getBytes(StandardCharsets.UTF_8);
                    long now = System.nanoTime();
                    producer.send(new ProducerRecord<>(topic, null, k, payload,
                            List.of(new RecordHeader(OutboxMessage.IDEMPOTENCY_KEY_HEADER, k))));
                    long recv = meet.arrive(key, true, now);
                    if (recv != 0) {
                        record(key, recv - now, firstMeasured, latency, measured, maxPerSecond, start);
                        Stages.arrived(Stages.BARE, key, index(key) >= firstMeasured, now, recv);
                    }
                });
                producer.flush();
            }
            long end = System.nanoTime() + 30_000_000_000L;
            while (measured.get() < total - firstMeasured && System.nanoTime() < end) {
                Thread.sleep(50);
            }
            System.arraycopy(cpuSeconds(cpu), 0, cpuOut, 0, 3);
        } finally {
            consumer.close();
        }
        return latency.getIntervalHistogram();
    }

    /**
     * Where the two commit times of a message meet: whichever end arrives second gets the
     * other's time back (the map holds a message only while one end is missing).
     */
    static final class Meeting {
        private final ConcurrentHashMap<String, long[]> waiting = new ConcurrentHashMap<>();

        /** Returns the other end's time, or 0 if this end is first. */
        long arrive(String key, boolean sender, long nanos) {
            long[] other = new long[1];
            waiting.compute(key, (k, v) -> {
                if (v == null) {
                    return new long[] {sender ? 1 : 0, nanos};
                }
                if ((v[0] == 1) == sender) {
                    return v; // the same end twice (a redelivery): keep the first
                }
                other[0] = v[1];
                return null;
            });
            return other[0];
        }
    }

    static void record(String key, long nanos, int firstMeasured, Recorder latency, AtomicLong measured,
            AtomicLongArray maxPerSecond, long start) {
        if (index(key) < firstMeasured) {
            return;
        }
        long micros = Math.max(0, nanos / 1000);
        latency.recordValue(micros);
        measured.incrementAndGet();
        int sec = (int) Math.min(maxPerSecond.length() - 1, (System.nanoTime() - start) / 1_000_000_000L);
        maxPerSecond.accumulateAndGet(sec, micros, Math::max);
    }

    /** Message i's position in the send schedule, from its key ({@code e<i>:...}). */
    private static long index(String key) {
        return Long.parseLong(key.substring(1, key.indexOf(':')));
    }

    private static double ms(long micros) {
        return InboxOverhead.ms(micros);
    }
}
