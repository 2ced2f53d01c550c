package io.txbox.bench;

import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;

/** Relay settings a scenario may vary, and building a relay with them. */
final class RelayRun {
    final int workers;
    final int batchSize;
    final Duration pollInterval;
    final Map<String, String> producer;
    final Duration laneLease;
    /** {@code --strict-fencing}: Kafka per-lane transactions (KafkaPublisher.Builder.strictFencing). */
    final boolean strictFencing;
    private long warmupRows;

    RelayRun(Options o) {
        workers = o.intValue("workers", Relay.DEFAULT_WORKERS, "relay worker threads");
        batchSize = o.intValue("batch", Relay.DEFAULT_BATCH_SIZE, "relay batch size (rows)");
        pollInterval = Duration.ofMillis(o.longValue("poll-ms", Relay.DEFAULT_POLL_INTERVAL.toMillis(), "relay poll interval (ms)"));
        producer = parseProps(o.string("producer", "", "Kafka producer overrides k=v[,k=v]"));
        laneLease = Duration.ofSeconds(o.longValue("lane-lease-s", Relay.DEFAULT_LANE_LEASE.toSeconds(), "relay lane lease (s)"));
        strictFencing = o.flag("strict-fencing", "Kafka per-lane transactions");
    }

    /** The relay's pool: a connection per worker, the listening one (PostgreSQL), one for the backlog sample. */
    int poolSize() {
        return workers + 2;
    }

        /** {@code linger.ms=10,batch.size=65536}: Kafka producer overrides for experiments. */
    static Map<String, String> parseProps(String s) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String part : s.split(",")) {
            if (part.isBlank()) {
                continue;
            }
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new Options.UsageException("--producer wants key=value[,key=value], got '" + part + "'");
            }
            m.put(part.substring(0, eq).trim(), part.substring(eq + 1).trim());
        }
        return m;
    }

    Relay build(DataSource ds, BenchEnv env, Destination dest, RelayCounter counter, Outbox wakeOn, String id) {
        Relay.Builder b = builder(ds, env.tables, id).route(dest.name, dest.route()).listener(counter);
        if (wakeOn != null) {
            b.wakeOn(wakeOn);
        }
        return b.build();
    }

    /** A relay builder with these settings; the caller adds routes and a listener. */
    Relay.Builder builder(DataSource ds, TxboxTables tables, String id) {
        return Relay.builder()
                .dataSource(ds)
                .tables(tables)
                .workers(workers)
                .batchSize(batchSize)
                .pollInterval(pollInterval)
                .relayId(id)
                .laneLease(laneLease)
                .publishTimeout(laneLease.compareTo(Relay.DEFAULT_PUBLISH_TIMEOUT.multipliedBy(2)) >= 0
                        ? Relay.DEFAULT_PUBLISH_TIMEOUT : laneLease.dividedBy(2));
    }

    /** Reads {@code --warmup-rows} (default 50,000); only scenarios that call {@link #warmup} read it. */
    RelayRun withWarmup(Options o) {
        warmupRows = o.longValue("warmup-rows", 50_000, "rows drained before the measured backlog");
        return this;
    }

    long warmupRows() {
        return warmupRows;
    }

    /**
     * Drains {@link #warmupRows} rows through a throw-away destination before anything is
     * measured, so the JIT has compiled the claim, publish and delete paths: without it a short
     * drain (10,000 rows take about a second) measures the interpreter, not the relay.
     */
    void warmup(BenchEnv env, DataSource writers, DataSource relayDs, Outbox outbox, Broker broker) throws Exception {
        if (warmupRows <= 0) {
            return;
        }
        long t0 = System.nanoTime();
        try (Destination dest = Destination.create(broker, env, "warmup", producer, strictFencing)) {
            byte[] payload = Scenario.payload(400);
            Backlog.fill(writers, outbox, dest.name, -warmupRows - 1, warmupRows, 2, 1000, payload, 0, null);
            RelayCounter counter = new RelayCounter(null);
            counter.target(warmupRows);
            Relay relay = build(relayDs, env, dest, counter, null, "bench-warmup");
            relay.start();
            counter.await(Duration.ofSeconds(60));
            relay.close();
        }
        vacuum(env);
        Scenario.log("warm-up: %,d rows written and drained in %.1f s (not measured)", warmupRows, (System.nanoTime() - t0) / 1e9);
    }

    static long outboxRows(BenchEnv env) throws SQLException {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + env.outboxTable())) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static long deadRows(BenchEnv env) throws SQLException {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + env.deadTable())) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** VACUUM ANALYZE (MariaDB: ANALYZE TABLE) the outbox, as autovacuum would soon after a bulk load. */
    static void vacuum(BenchEnv env) throws SQLException {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
            s.execute((env.mariadb ? "ANALYZE TABLE " : "VACUUM ANALYZE ") + env.outboxTable());
        }
    }
}
