package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * backlog-scaling: does the relay slow down when the outbox is long? Drains a {@code --small}
 * backlog (default 10,000) and a {@code --rows} backlog (default 1,000,000) in the same way
 * and reports ratio = large rate / small rate. Rates are measured from the first confirmed
 * batch to the last, so the relay's start-up (lane takeover, producer connect) counts for
 * neither. Kafka by default, {@code --broker rabbitmq} for the other.
 */
final class BacklogScaling extends Scenario {
    private long small;
    private long large;
    private Broker broker;
    private int payloadSize;
    private RelayRun relayRun;
    private long lost = -1;

    @Override
    void configure(Options o) {
        small = o.longValue("small", 10_000, "rows of the small backlog");
        large = o.longValue("rows", 1_000_000, "rows of the large backlog");
        broker = Broker.parse(o.string("broker", "kafka", "kafka or rabbitmq"));
        payloadSize = o.intValue("payload", 400, "payload bytes per row");
        relayRun = new RelayRun(o).withWarmup(o);
    }

    @Override
    boolean failedCorrectness() {
        return lost != 0;
    }

    @Override
    void run() throws Exception {
        HikariDataSource writers = env.pool("writers", 2);
        HikariDataSource relayDs = env.pool("relay", relayRun.poolSize());
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        byte[] payload = payload(payloadSize);
        List<Html.Series> series = new ArrayList<>();
        double[] rates = new double[2];
        long[] sizes = {small, large};
        long totalLost = 0;
        long offset = 0;
        relayRun.warmup(env, writers, relayDs, outbox, broker);
        for (int k = 0; k < 2; k++) {
            long n = sizes[k];
            try (Destination dest = Destination.create(broker, env, "scaling", relayRun.producer)) {
                double fill = Backlog.fill(writers, outbox, dest.name, offset, n, 2, 1000, payload, 0, null);
                RelayRun.vacuum(env);
                log("%,d rows written at %,.0f rows/s; draining", n, fill);
                long start = System.nanoTime();
                Timeline line = new Timeline("backlog " + n, start);
                RelayCounter counter = new RelayCounter(line);
                counter.target(n);
                Relay relay = relayRun.build(relayDs, env, dest, counter, null, "bench-scaling-" + k);
                relay.start();
                counter.await(Duration.ofSeconds(60));
                relay.close();
                double secs = (counter.reachedAt() - counter.firstAt()) / 1e9;
                double wall = n / ((counter.reachedAt() - start) / 1e9);
                // the rows of the first batch were published before the clock started; a
                // backlog that fits in one or two batches has no steady state, so the wall rate stands in
                long after = n - counter.firstCount();
                rates[k] = secs > 0 && after >= relayRun.batchSize ? after / secs : wall;
                KafkaAdmin.ReadBack back = dest.readBack(n, Duration.ofSeconds(15));
                totalLost += back.lost() + RelayRun.outboxRows(env);
                log("backlog %,d: %,.0f msg/s steady (%,.0f msg/s including start-up), lost %d", n, rates[k], wall, back.lost());
                report.figure("rate_" + label(n), Report.round(rates[k], 0), "msg/s");
                report.figure("rate_with_startup_" + label(n), Report.round(wall, 0), "msg/s");
                series.add(line.series(0));
            }
            offset += n;
            try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
                s.execute("TRUNCATE " + env.outboxTable());
            }
        }
        lost = totalLost;
        double ratio = rates[1] / rates[0];
        report.figure("ratio", Report.round(ratio, 3), "").figure("lost", lost, "msgs")
                .target("ratio", ">=", 0.8).target("lost", "==", 0);
        html.paragraph(String.format("%s: %,d-row backlog %,.0f msg/s, %,d-row backlog %,.0f msg/s, ratio %.3f.",
                        broker.id, small, rates[0], large, rates[1], ratio))
                .timeline("Published per second, each drain from its own start", "msg/s", series);
    }

    static String label(long n) {
        if (n >= 1_000_000 && n % 1_000_000 == 0) {
            return (n / 1_000_000) + "m";
        }
        if (n >= 1_000 && n % 1_000 == 0) {
            return (n / 1_000) + "k";
        }
        return Long.toString(n);
    }
}
