package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * cdc-kafka: the same writers through the polling relay and through change data capture, end to
 * end, in one run. The writers are relay-kafka's concurrent mode ({@code --rows}, {@code
 * --writers} threads, {@code --tx-size} rows per transaction, paced to {@code --rate} if set), each
 * routing key written by one thread so that its order is defined. First pass: the outbox polled by
 * an in-process relay ({@link RelayRun}'s settings). Second pass: the outbox in CDC mode, read by
 * Debezium's embedded engine (PostgreSQL connector, pgoutput) with txbox's router in a JVM of its
 * own ({@link EngineChild}). A consumer reads every record back while the writers run; a pass's
 * figure is rows / time from its first write to the arrival of its last new step key.
 * {@code cdc_to_poll} is the CDC rate over the polling one. The oracle: every step key arrives, in
 * per-key order ({@link KeyOrder}), and duplicates are counted.
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
    private RelayRun relayRun;
    private long lost = -1;
    private long violations = -1;

    /** One pass: end-to-end rate, the writers' rate, and what the reader found. */
    private record Pass(double msgsPerSec, double writeRate, double seconds, KafkaAdmin.ReadBack back, KeyOrder order) {}

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
        warmupRows = o.longValue("warmup-rows", 20_000, "messages through each path before its measured pass");
        relayRun = new RelayRun(o);
    }

    @Override
    boolean failedCorrectness() {
        return lost != 0 || violations != 0;
    }

    @Override
    void run() throws Exception {
        HikariDataSource writerPool = env.pool("writers", writers);
        HikariDataSource relayPool = env.pool("relay", relayRun.workers + 1);
        byte[] payload = payload(payloadSize);
        String base = "bench-cdc-" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 30, 1L << 31), 36);
        String[] topics = {base + "-poll-warm", base + "-poll", base + "-cdc-warm", base + "-cdc"};
        for (String t : topics) {
            env.createTopic(t, 4);
        }
        log("%,d messages of %d B per pass, %d writers x %d per transaction%s", rows, payloadSize, writers, txSize,
                rate > 0 ? String.format(", paced to %,.0f/s", rate) : "");

        Outbox polling = Outbox.builder().tables(env.tables).build();
        Relay.Builder b = relayRun.builder(relayPool, env.tables, "bench-relay").wakeOn(polling);
        for (String t : new String[] {topics[0], topics[1]}) {
            b.route(t, Destination.kafkaRoute(env.kafkaBootstrap(), t, relayRun.producer, relayRun.strictFencing));
        }
        Pass poll;
        try (Relay relay = b.build()) {
            relay.start();
            warmup("polling relay", writerPool, polling, topics[0], payload);
            poll = pass("polling relay", writerPool, polling, topics[1], 0, payload);
        }
        long left = RelayRun.outboxRows(env);

        Outbox capturing = Outbox.builder().tables(env.tables).changeDataCapture().build();
        Pass cdc;
        long t0 = System.nanoTime();
        // the slot, publication and topic prefix: lower case, unique per run
        try (EngineChild engine = EngineChild.start(env, "txbox_bench_" + base.substring("bench-cdc-".length()))) {
            double readyS = (System.nanoTime() - t0) / 1e9;
            log("Debezium engine streaming after %.1f s", readyS);
            report.figure("engine_ready_s", Report.round(readyS, 1), "s");
            warmup("Debezium", writerPool, capturing, topics[2], payload);
            cdc = pass("Debezium", writerPool, capturing, topics[3], rows, payload);
        }
        left += RelayRun.outboxRows(env);

        double ratio = cdc.msgsPerSec() / poll.msgsPerSec();
        lost = poll.back().lost() + cdc.back().lost() + left;
        violations = poll.order().violationCount() + cdc.order().violationCount();
        log("CDC / polling = %.3f", ratio);
        report.figure("cdc_msgs_per_sec", Report.round(cdc.msgsPerSec(), 0), "msg/s")
                .figure("poll_msgs_per_sec", Report.round(poll.msgsPerSec(), 0), "msg/s")
                .figure("cdc_to_poll", Report.round(ratio, 3), "")
                .figure("cdc_write_rows_per_sec", Report.round(cdc.writeRate(), 0), "rows/s")
                .figure("poll_write_rows_per_sec", Report.round(poll.writeRate(), 0), "rows/s")
                .figure("cdc_seconds", Report.round(cdc.seconds(), 2), "s")
                .figure("poll_seconds", Report.round(poll.seconds(), 2), "s")
                .figure("rows", rows, "msgs")
                .figure("lost", lost, "msgs")
                .figure("cdc_lost", cdc.back().lost(), "msgs")
                .figure("poll_lost", poll.back().lost(), "msgs")
                .figure("cdc_duplicates", cdc.back().duplicates(), "msgs")
                .figure("poll_duplicates", poll.back().duplicates(), "msgs")
                .figure("order_violations", violations, "msgs")
                .figure("cdc_order_violations", cdc.order().violationCount(), "msgs")
                .figure("poll_order_violations", poll.order().violationCount(), "msgs")
                .figure("outbox_left", left, "rows");
        report.target("lost", "==", 0).target("order_violations", "==", 0);
        report.note("polling: an in-process relay, " + relayRun.workers + " workers, batch " + relayRun.batchSize
                + "; CDC: Debezium's embedded engine (PostgreSQL connector, pgoutput, insert-only publication) with"
                + " TxboxOutboxRouter in its own JVM, publishing with acks=all and an idempotent producer and committing"
                + " offsets after each batch is confirmed");
        report.note("both passes: rows / time from the first write to the arrival of the last new step key at a consumer"
                + " reading the topic from its start; the polling pass runs first, without the engine");
        html.heading("Per pass").pre(String.format("polling relay: %s%nDebezium:      %s%n", describe(poll), describe(cdc)));
    }

    private static String describe(Pass p) {
        return String.format("%,.0f msg/s end to end over %.2f s (writers %,.0f rows/s); %s; %s read back",
                p.msgsPerSec(), p.seconds(), p.writeRate(), p.order(), p.back());
    }

    private void warmup(String path, DataSource ds, Outbox outbox, String topic, byte[] payload) throws Exception {
        if (warmupRows <= 0) {
            return;
        }
        long t0 = System.nanoTime();
        CompletableFuture<Double> writing = write(ds, outbox, topic, -warmupRows - 1, warmupRows, 0, payload);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, warmupRows, IDLE);
        writing.join();
        log("%s warm-up: %,d messages in %.1f s (not measured), %,d not read back", path, warmupRows,
                (System.nanoTime() - t0) / 1e9, back.lost());
    }

    /**
     * Writes rows {@code [from, from + rows)} to {@code topic} through {@code outbox} while a
     * consumer reads the topic from its start until every step key arrived.
     */
    private Pass pass(String path, DataSource ds, Outbox outbox, String topic, long from, byte[] payload) throws Exception {
        KeyOrder order = new KeyOrder();
        AtomicLong lastNew = new AtomicLong();
        long t0 = System.nanoTime();
        CompletableFuture<Double> writing = write(ds, outbox, topic, from, rows, rate, payload);
        KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), topic, null, rows, IDLE, r -> {
            String step = KafkaAdmin.stepKey(r);
            if (step != null && r.key() != null) {
                int before = order.distinct();
                order.add(new String(r.key(), StandardCharsets.UTF_8),
                        Long.parseLong(step.substring(1, step.length() - Backlog.STEP.length() - 1)));
                if (order.distinct() > before) {
                    lastNew.set(System.nanoTime());
                }
            }
        });
        double writeRate = writing.join();
        double secs = (lastNew.get() - t0) / 1e9;
        Pass p = new Pass(rows / secs, writeRate, secs, back, order);
        log("%s: %s", path, describe(p));
        return p;
    }

    /** The writers on a thread of their own: key-owned, {@code txSize} rows per transaction; their rows per second. */
    private CompletableFuture<Double> write(DataSource ds, Outbox outbox, String topic, long from, long n, double pace,
            byte[] payload) {
        CompletableFuture<Double> done = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                done.complete(Backlog.fill(ds, outbox, topic, from, n, writers, txSize, payload, pace, null, KEYS, true));
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "cdc-bench-writers");
        t.start();
        return done;
    }
}
