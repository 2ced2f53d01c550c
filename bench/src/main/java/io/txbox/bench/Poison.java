package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Lanes;
import io.txbox.outbox.Outbox;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Relay;
import io.txbox.relay.Route;
import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * poison: drains a backlog to Kafka with {@code --poison} of the routing keys failing every
 * time, against the same backlog without poison in the same run. One writer thread writes the
 * rows in number order, routing key {@code acct-<i mod keys>}; a poison key's every publish
 * fails with a retryable error. Figures: {@code healthy_ratio}, the healthy rows' rate with
 * poison over the rate without (rows published by {@code --max-seconds} count when the healthy
 * rows are not all out by then); {@code first_healthy_delay_ms}, per lane that holds a poison
 * key, from the poison row's first failure to the first publish of a healthy row after it in
 * that lane, the worst lane (the cap when one never went out); {@code order_violations}, read
 * back from the topic per routing key.
 */
final class Poison extends Scenario {
    private long rows;
    private int keys;
    private double poisonShare;
    private double maxSeconds;
    private RelayRun relayRun;
    private long orderViolations = -1;
    private long lost = -1;

    @Override
    void configure(Options o) {
        rows = o.longValue("rows", 100_000, "rows in each backlog");
        keys = o.intValue("keys", 1000, "routing keys");
        poisonShare = o.doubleValue("poison", 0.01, "share of the routing keys whose every publish fails");
        maxSeconds = o.doubleValue("max-seconds", 120, "longest wait for the healthy rows of the poisoned backlog");
        relayRun = new RelayRun(o).withWarmup(o);
    }

    @Override
    boolean failedCorrectness() {
        return orderViolations != 0 || lost != 0;
    }

    private boolean poisoned(int key) {
        int every = (int) Math.max(1, Math.round(1 / poisonShare));
        return poisonShare > 0 && key % every == every / 2;
    }

    @Override
    void run() throws Exception {
        HikariDataSource writers = env.pool("writers", 1);
        HikariDataSource relayDs = env.pool("relay", relayRun.poolSize());
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        byte[] payload = payload(400);
        relayRun.warmup(env, writers, relayDs, outbox, Broker.KAFKA);
        Set<String> poisonKeys = new HashSet<>();
        for (int k = 0; k < keys; k++) {
            if (poisoned(k)) {
                poisonKeys.add("acct-" + k);
            }
        }
        long poisonRows = 0;
        for (long i = 0; i < rows; i++) {
            poisonRows += poisoned((int) (i % keys)) ? 1 : 0;
        }
        long healthy = rows - poisonRows;

        // the same backlog without poison: the healthy rate
        double cleanRate;
        try (Destination dest = Destination.create(Broker.KAFKA, env, "clean", relayRun.producer)) {
            Backlog.fill(writers, outbox, dest.name, 0, rows, 1, 1000, payload, 0, null, keys);
            RelayRun.vacuum(env);
            RelayCounter counter = new RelayCounter(null);
            counter.target(healthy);
            Relay relay = relayRun.build(relayDs, env, dest, counter, null, "bench-clean");
            long t0 = System.nanoTime();
            relay.start();
            counter.await(Duration.ofSeconds(60));
            cleanRate = healthy / ((counter.reachedAt() - t0) / 1e9);
            relay.close();
            log("without poison: %,d rows drained, %,.0f healthy rows/s", rows, cleanRate);
        }

        try (Destination dest = Destination.create(Broker.KAFKA, env, "poison", relayRun.producer)) {
            Backlog.fill(writers, outbox, dest.name, rows, rows, 1, 1000, payload, 0, null, keys);
            RelayRun.vacuum(env);
            FailingKeys failing = new FailingKeys(dest.route(), poisonKeys);
            RelayCounter counter = new RelayCounter(null);
            counter.target(healthy);
            Relay relay = relayRun.builder(relayDs, env.tables, "bench-poison").route(dest.name, Route.of(failing, dest.name))
                    .listener(counter).build();
            long t0 = System.nanoTime();
            relay.start();
            long deadline = t0 + (long) (maxSeconds * 1e9);
            while (counter.published.get() < healthy && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            long end = counter.reachedAt() != 0 ? counter.reachedAt() : System.nanoTime();
            long done = counter.published.get();
            double poisonRate = done / ((end - t0) / 1e9);
            relay.close();
            double ratio = poisonRate / cleanRate;
            double delayMs = failing.firstHealthyDelayMillis(rows, rows, keys, (end - t0) / 1e6);
            KeyOrder order = new KeyOrder();
            KafkaAdmin.ReadBack back = KafkaAdmin.readBack(env.kafkaBootstrap(), dest.name, null, done, Duration.ofSeconds(10),
                    r -> {
                        String step = KafkaAdmin.stepKey(r);
                        if (step != null && r.key() != null) {
                            order.add(new String(r.key(), StandardCharsets.UTF_8),
                                    Long.parseLong(step.substring(1, step.length() - Backlog.STEP.length() - 1)));
                        }
                    });
            orderViolations = order.violationCount();
            // published (confirmed to the relay) but not read back; healthy rows not out by the cap are not lost
            lost = Math.max(0, done - back.distinct());
            log("with %d poison keys (%,d rows): %,d of %,d healthy rows in %.1f s, %,.0f rows/s; healthy_ratio %.3f;"
                    + " first healthy delay %.0f ms; order violations %d", poisonKeys.size(), poisonRows, done, healthy,
                    (end - t0) / 1e9, poisonRate, ratio, delayMs, orderViolations);
            report.figure("healthy_ratio", Report.round(ratio, 3), "")
                    .figure("first_healthy_delay_ms", Report.round(delayMs, 0), "ms")
                    .figure("order_violations", orderViolations, "msgs")
                    .figure("clean_healthy_per_sec", Report.round(cleanRate, 0), "rows/s")
                    .figure("poison_healthy_per_sec", Report.round(poisonRate, 0), "rows/s")
                    .figure("healthy_published", done, "rows")
                    .figure("healthy_rows", healthy, "rows")
                    .figure("poison_keys", poisonKeys.size(), "keys")
                    .figure("poison_rows", poisonRows, "rows")
                    .figure("healthy_not_published", healthy - done, "rows")
                    .figure("lost", lost, "msgs")
                    .figure("dead_lettered", counter.dead.get(), "rows");
            report.target("healthy_ratio", ">=", 0.95).target("order_violations", "==", 0).target("lost", "==", 0);
            report.note(String.format("%,d rows, %d keys, %d of them poison; healthy rows not out after %.0f s count as"
                    + " not published", rows, keys, poisonKeys.size(), maxSeconds));
            html.paragraph(String.format("healthy_ratio %.3f, first_healthy_delay_ms %.0f, order violations %d",
                    ratio, delayMs, orderViolations));
        }
    }

    /**
     * A publisher that fails every record of the poison keys with a retryable error and passes
     * the others on; notes when each row was first handed to it.
     */
    private static final class FailingKeys implements Publisher {
        private final Route inner;
        private final Set<String> poison;
        private final Map<Long, Long> firstSeen = new ConcurrentHashMap<>();

        FailingKeys(Route inner, Set<String> poison) {
            this.inner = inner;
            this.poison = poison;
        }

        @Override
        public String broker() {
            return inner.publisher().broker();
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            String step = record.stepKey();
            firstSeen.putIfAbsent(Long.parseLong(step.substring(1, step.length() - Backlog.STEP.length() - 1)), System.nanoTime());
            if (record.routingKey() != null && poison.contains(record.routingKey())) {
                return CompletableFuture.failedFuture(PublishException.retryable("poison key " + record.routingKey(), null));
            }
            return inner.publisher().publish(inner.target(), record);
        }

        @Override
        public void endOfBatch() {
            inner.publisher().endOfBatch();
        }

        @Override
        public void close() {
            inner.publisher().close();
        }

        /**
         * Per lane with a poison key: the first poison row's first attempt to the first attempt
         * of a healthy row numbered after it in the lane; the worst lane, {@code capMillis} for
         * a lane whose healthy rows never went out. One writer wrote the rows in number order.
         */
        double firstHealthyDelayMillis(long from, long n, int keys, double capMillis) {
            Map<Short, long[]> poisonFirst = new HashMap<>();
            for (long i = 0; i < n; i++) {
                String key = "acct-" + ((from + i) % keys);
                if (poison.contains(key)) {
                    short lane = Lanes.of(key, "o" + (from + i) + ":" + Backlog.STEP);
                    poisonFirst.putIfAbsent(lane, new long[] {i, Long.MAX_VALUE});
                }
            }
            double worst = 0;
            for (Map.Entry<Short, long[]> e : poisonFirst.entrySet()) {
                long first = e.getValue()[0];
                Long failedAt = firstSeen.get(from + first);
                double lane = capMillis;
                if (failedAt != null) {
                    for (long i = first + 1; i < n; i++) {
                        String key = "acct-" + ((from + i) % keys);
                        if (poison.contains(key) || Lanes.of(key, "o" + (from + i) + ":" + Backlog.STEP) != e.getKey()) {
                            continue;
                        }
                        Long at = firstSeen.get(from + i);
                        if (at != null) {
                            lane = Math.max(0, (at - failedAt) / 1e6);
                        }
                        break;
                    }
                }
                worst = Math.max(worst, lane);
            }
            return worst;
        }
    }
}
