package io.txbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.inbox.Inbox;
import io.txbox.internal.Connections;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Relay;
import io.txbox.testkit.PrivateKafkaBroker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * soak: the relay path under random faults for {@code --minutes}. Writers send at {@code --rate}
 * msg/s through the outbox, each in a transaction that also records the key in {@code sent};
 * the relay publishes to a private Kafka broker; consumers run every record through an inbox
 * and insert one business row per first delivery. Every {@code --fault-every} seconds (±50%)
 * one fault from {@code --faults} strikes, taking the kinds in turn from a random first one, so
 * any run with as many faults as kinds injects every kind:
 *
 * <ul>
 *   <li>{@code relay}: the relay's database sessions are terminated and the relay is closed
 *       mid-flight, then a new relay (new id) starts;
 *   <li>{@code db}: every database session of this run is terminated (writers, relay, consumers);
 *   <li>{@code kafka}: the broker is killed ({@code SIGKILL}) and restarted on the same address.
 * </ul>
 *
 * <p>Each fault must show an effect, or it counts as {@code faults_without_effect}: {@code relay}
 * and {@code db} terminated at least one session; {@code kafka} stopped the flow of publish
 * confirmations while the broker was dead, or failed a publish. {@code faults} counts the faults
 * that had their effect.
 *
 * <p>At the end, with the writers stopped, the outbox drained and the consumers caught up with
 * every record on the topic (redeliveries included, so a late double effect has landed): lost =
 * keys committed in {@code sent} without a business row, double_effects = keys with more than
 * one business row. Both must be 0, as must faults_without_effect, and the consumers must catch
 * up; the run exits with code 2 otherwise.
 */
final class Soak extends Scenario {
    private double minutes;
    private double rate;
    private double faultEvery;
    private List<String> faults;
    private int payloadSize;
    private RelayRun relayRun;
    private long lost = -1;
    private long sent;
    private long doubles = -1;
    private long faultsWithoutEffect = -1;
    private boolean caughtUp;

    @Override
    void configure(Options o) {
        minutes = o.doubleValue("minutes", 5, "minutes of load");
        rate = o.doubleValue("rate", 200, "messages per second");
        faultEvery = o.doubleValue("fault-every", 10, "mean seconds between faults");
        faults = List.of(o.string("faults", "relay,db,kafka", "fault kinds taken in turn: relay,db,kafka").split(","));
        for (String f : faults) {
            if (!List.of("relay", "db", "kafka").contains(f)) {
                throw new Options.UsageException("--faults takes relay, db, kafka; got '" + f + "'");
            }
        }
        payloadSize = o.intValue("payload", 400, "payload bytes");
        relayRun = new RelayRun(o);
    }

    @Override
    boolean failedCorrectness() {
        // nothing sent proves nothing: the writers failed throughout
        return sent == 0 || lost != 0 || doubles != 0 || faultsWithoutEffect != 0 || !caughtUp;
    }

    @Override
    void run() throws Exception {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + env.q("sent") + " (message_key varchar(255) PRIMARY KEY)");
        }
        // the broker is only ours to kill when kafka faults are on; otherwise --kafka is honoured
        PrivateKafkaBroker broker = faults.contains("kafka") ? env.privateBroker() : null;
        env.usersPerPool();
        HikariDataSource writeDs = env.pool("writers", 4, false);
        HikariDataSource relayDs = env.pool("relay", relayRun.poolSize());
        HikariDataSource recvDs = env.pool("receivers", 2, false);
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        // a retry after an unknown commit outcome finds its key already there
        String insertSent = env.mariadb ? "INSERT IGNORE INTO sent (message_key) VALUES (?)"
                : "INSERT INTO sent (message_key) VALUES (?) ON CONFLICT DO NOTHING";
        Inbox inbox = Inbox.builder("bench-soak").tables(env.tables).build();
        byte[] payload = payload(payloadSize);
        long start = System.nanoTime();
        Timeline sentLine = new Timeline("sent", start);
        Timeline pubLine = new Timeline("published", start);
        Timeline recvLine = new Timeline("received (first)", start);
        RelayCounter counter = new RelayCounter(pubLine);
        Map<String, Integer> injected = new LinkedHashMap<>();
        Map<String, Integer> effective = new LinkedHashMap<>();
        List<String> faultLog = new ArrayList<>();

        try (Destination dest = Destination.create(Broker.KAFKA, env, "soak", relayRun.producer)) {
            Relay[] relay = {relayRun.build(relayDs, env, dest, counter, outbox, "bench-soak-0")};
            relay[0].start();
            InboxConsumer consumer = new InboxConsumer(env.kafkaBootstrap(), dest.name, 4, 2, recvDs, inbox,
                    (key, first, nanos) -> {
                        if (first) {
                            recvLine.record(1);
                        }
                    });
            consumer.awaitAssigned(Duration.ofSeconds(30));
            AtomicBoolean writing = new AtomicBoolean(true);
            AtomicLong committed = new AtomicLong();
            AtomicLong writeErrors = new AtomicLong();
            long t0 = System.nanoTime();
            long end = t0 + (long) (minutes * 60e9);
            List<Thread> writers = new ArrayList<>();
            AtomicLong next = new AtomicLong();
            for (int w = 0; w < 4; w++) {
                Thread th = new Thread(() -> {
                    while (writing.get()) {
                        long i = next.getAndIncrement();
                        long due = t0 + (long) (i / rate * 1e9);
                        if (due > end) {
                            return;
                        }
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            LockSupport.parkNanos(wait);
                        }
                        String key = "s" + i;
                        OutboxMessage m = OutboxMessage.builder(StepKey.of(key, "soak"), dest.name).routingKey("acct-" + (i % 100))
                                .payload(payload).build();
                        // retried until it commits; a retry after an unknown commit outcome is a no-op
                        for (int attempt = 0; writing.get() && attempt < 100; attempt++) {
                            try (Connection c = writeDs.getConnection()) {
                                try {
                                    outbox.send(c, m);
                                    try (PreparedStatement ps = c.prepareStatement(
                                            insertSent)) {
                                        ps.setString(1, m.stepKey().value());
                                        ps.executeUpdate();
                                    }
                                    c.commit();
                                } catch (SQLException | RuntimeException e) {
                                    Connections.rollbackQuietly(c); // a failed rollback is a broken connection
                                    throw e;
                                }
                                committed.incrementAndGet();
                                sentLine.record(1);
                                break;
                            } catch (SQLException | RuntimeException e) {
                                writeErrors.incrementAndGet();
                                Backlog.sleep(100);
                            }
                        }
                    }
                }, "soak-writer-" + w);
                th.start();
                writers.add(th);
            }

            int generation = 1;
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            int turn = rnd.nextInt(faults.size());
            while (System.nanoTime() < end) {
                long pause = (long) (faultEvery * 1000 * (0.5 + rnd.nextDouble()));
                Thread.sleep(Math.max(1, Math.min(pause, (end - System.nanoTime()) / 1_000_000)));
                if (System.nanoTime() >= end) {
                    break;
                }
                String fault = faults.get(turn++ % faults.size());
                double at = (System.nanoTime() - start) / 1e9;
                injected.merge(fault, 1, Integer::sum);
                boolean effect;
                switch (fault) {
                    case "relay" -> {
                        int killed = terminate("relay");
                        relay[0].close();
                        relay[0] = relayRun.build(relayDs, env, dest, counter, outbox, "bench-soak-" + generation++);
                        relay[0].start();
                        effect = killed > 0;
                        faultLog.add(String.format("%.1f s: relay killed (%d sessions) and replaced", at, killed));
                    }
                    case "db" -> {
                        int killed = terminate(null);
                        effect = killed > 0;
                        faultLog.add(String.format("%.1f s: %d database sessions terminated", at, killed));
                    }
                    case "kafka" -> {
                        long failedBefore = relay[0].status().failed();
                        broker.kill();
                        // confirmations in flight at the kill may still arrive; after that, none can
                        Thread.sleep(500);
                        long confirmedDown = counter.published.get();
                        Thread.sleep(500 + rnd.nextInt(3000));
                        boolean stalled = counter.published.get() == confirmedDown;
                        long r0 = System.nanoTime();
                        broker.restart();
                        effect = stalled || relay[0].status().failed() > failedBefore;
                        faultLog.add(String.format("%.1f s: Kafka broker killed and restarted (%.1f s to restart)%s", at,
                                (System.nanoTime() - r0) / 1e9, stalled ? ", no publish confirmed while it was dead" : ""));
                    }
                    default -> throw new IllegalStateException(fault);
                }
                if (effect) {
                    effective.merge(fault, 1, Integer::sum);
                } else {
                    faultLog.set(faultLog.size() - 1, faultLog.get(faultLog.size() - 1) + ": NO EFFECT");
                }
                log("fault: %s", faultLog.get(faultLog.size() - 1));
            }
            writing.set(false);
            for (Thread th : writers) {
                th.join();
            }
            log("writers stopped after %,d commits (%,d write errors); draining", committed.get(), writeErrors.get());
            sent = count("SELECT count(*) FROM sent");
            long drainEnd = System.nanoTime() + 180_000_000_000L;
            while (System.nanoTime() < drainEnd) {
                if (count("SELECT count(*) FROM " + env.outboxTable()) == 0
                        && count("SELECT count(DISTINCT message_key) FROM business") >= sent) {
                    break;
                }
                Thread.sleep(200);
            }
            // every record on the topic consumed, redeliveries included: a late double effect has landed
            caughtUp = KafkaAdmin.awaitCaughtUp(env.kafkaBootstrap(), "bench-" + dest.name, dest.name, Duration.ofSeconds(120));
            relay[0].close();
            consumer.close();
            lost = count("SELECT count(*) FROM sent s WHERE NOT EXISTS (SELECT 1 FROM business b WHERE b.message_key = s.message_key)");
            doubles = count("SELECT count(*) FROM (SELECT message_key FROM business GROUP BY message_key HAVING count(*) > 1) d");
            long deadRows = RelayRun.deadRows(env);
            long left = count("SELECT count(*) FROM " + env.outboxTable());
            double secs = (System.nanoTime() - t0) / 1e9;
            int withEffect = effective.values().stream().mapToInt(Integer::intValue).sum();
            faultsWithoutEffect = faultLog.size() - withEffect;
            report.figure("lost", lost, "msgs")
                    .figure("double_effects", doubles, "msgs")
                    .figure("sent", sent, "msgs")
                    .figure("published_reported", counter.published.get(), "msgs")
                    .figure("duplicates_absorbed", consumer.duplicates.get(), "msgs")
                    .figure("outbox_left", left, "rows")
                    .figure("dead_lettered", deadRows, "rows")
                    .figure("faults", withEffect, "")
                    .figure("faults_without_effect", faultsWithoutEffect, "")
                    .figure("consumers_caught_up", caughtUp ? 1 : 0, "")
                    .figure("write_errors", writeErrors.get(), "")
                    .figure("consumer_restarts", consumer.errors.get(), "")
                    .figure("seconds", Report.round(secs, 1), "s")
                    .detail("faults_by_kind", effective)
                    .detail("faults_injected_by_kind", injected)
                    .detail("fault_log", faultLog)
                    .target("lost", "==", 0)
                    .target("double_effects", "==", 0)
                    .target("faults_without_effect", "==", 0)
                    .target("consumers_caught_up", "==", 1);
            html.paragraph(String.format("%.1f min at %.0f msg/s with faults %s every ~%.0f s: sent %,d, lost %d, double effects %d,"
                            + " duplicates absorbed by the inbox %,d.", minutes, rate, faults, faultEvery, sent, lost, doubles,
                            consumer.duplicates.get()))
                    .timeline("Messages per second", "msg/s", List.of(sentLine.series(0), pubLine.series(0), recvLine.series(0)))
                    .heading("Faults")
                    .pre(String.join("\n", faultLog));
        }
    }

    /** Terminates this run's sessions of one pool, or of every pool when {@code pool} is null. */
    private int terminate(String pool) throws SQLException {
        String pattern = pool == null ? env.applicationName("") + "%" : env.applicationName(pool);
        if (env.mariadb) {
            return killMariaDb(pattern);
        }
        try (Connection c = env.adminConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        + " WHERE application_name LIKE ? AND pid <> pg_backend_pid()")) {
            ps.setString(1, pattern);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** MariaDB: the pools log in as users of their own ({@link BenchEnv#usersPerPool}), found by name. */
    private int killMariaDb(String userPattern) throws SQLException {
        int killed = 0;
        try (Connection c = env.adminConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT id FROM information_schema.processlist WHERE user LIKE ? AND id <> CONNECTION_ID()");
                Statement kill = c.createStatement()) {
            ps.setString(1, userPattern);
            List<Long> ids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
            for (long id : ids) {
                try {
                    kill.execute("KILL CONNECTION " + id);
                    killed++;
                } catch (SQLException e) {
                    // closed meanwhile (error 1094, unknown thread): nothing to kill
                }
            }
        }
        return killed;
    }

    private long count(String sql) throws SQLException {
        try (Connection c = env.adminConnection(); Statement s = c.createStatement()) {
            s.execute(env.mariadb ? "USE `" + env.schema + "`" : "SET search_path TO \"" + env.schema + "\"");
            try (ResultSet rs = s.executeQuery(sql)) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
