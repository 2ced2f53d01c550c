package io.txbox.faults;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import io.txbox.testkit.TestDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The relays of one order history: child JVMs ({@link OrderRelayChild}) and in-process relays,
 * each in a slot that the faults stop, kill, restart and stall, and that {@link #settle()} brings
 * back up before the history drains.
 */
final class OrderFleet implements AutoCloseable {
    /** The database user of the relays on MariaDB, whose sessions a session kill looks for. */
    static final String MARIADB_RELAY_USER = "txbox_order_relay";

    /** A broker a fault takes away and brings back. */
    interface Outage {
        void down();

        void up();
    }

    private final OrderLog log;
    private final String historyId;
    private final String broker;
    private final String address;
    private final String target;
    private final TestDatabase db;
    private final String schema;
    private final DataSource admin;
    private final OrderSpares spares;
    private final List<Slot> slots = new ArrayList<>();

    OrderFleet(OrderLog log, String historyId, String broker, String address, String target, TestDatabase db,
            String schema, DataSource admin, OrderSpares spares) {
        this.spares = spares;
        this.log = log;
        this.historyId = historyId;
        this.broker = broker;
        this.address = address;
        this.target = target;
        this.db = db;
        this.schema = schema;
        this.admin = admin;
    }

    /** Adds a relay slot (not started) and returns its index. */
    int add(boolean child, int batchSize) {
        slots.add(new Slot(slots.size(), child, batchSize));
        return slots.size() - 1;
    }

    Slot slot(int index) {
        return slots.get(index);
    }

    List<Slot> slots() {
        return List.copyOf(slots);
    }

    /** Starts every slot, the children in parallel. */
    void startAll() throws Exception {
        List<Thread> starters = new ArrayList<>();
        List<Exception> failures = new ArrayList<>();
        for (Slot s : slots) {
            Thread t = new Thread(() -> {
                try {
                    s.start();
                } catch (Exception e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            }, "order-start-" + s.index);
            t.start();
            starters.add(t);
        }
        for (Thread t : starters) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw failures.get(0);
        }
    }

    /**
     * Ready to drain: stopped children continued, and if no relay runs any more, the killed ones
     * started again (a relay left down is a relay gone for good, which the others take over from).
     */
    void settle() throws Exception {
        for (Slot s : slots) {
            s.cont();
        }
        if (slots.stream().noneMatch(Slot::running)) {
            for (Slot s : slots) {
                s.start();
            }
        }
    }

    /**
     * Terminates one relay database session ({@code pg_terminate_backend}, or {@code KILL} on
     * MariaDB), picked with {@code random}; returns false if none was open.
     */
    boolean terminateSession(Random random) throws SQLException {
        boolean postgres = db.kind() == TestDatabase.Kind.POSTGRESQL;
        List<Long> sessions = new ArrayList<>();
        try (Connection c = admin.getConnection(); PreparedStatement ps = c.prepareStatement(postgres
                ? "SELECT pid FROM pg_stat_activity WHERE application_name LIKE ?"
                : "SELECT id FROM information_schema.processlist WHERE user = ? AND db = ?")) {
            if (postgres) {
                ps.setString(1, OrderRelayChild.applicationName(historyId) + "-%");
            } else {
                ps.setString(1, MARIADB_RELAY_USER);
                ps.setString(2, schema);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    sessions.add(rs.getLong(1));
                }
            }
            if (sessions.isEmpty()) {
                log.event("no relay session to terminate");
                return false;
            }
            long victim = sessions.get(random.nextInt(sessions.size()));
            try (Statement s = c.createStatement()) {
                s.execute(postgres ? "SELECT pg_terminate_backend(" + victim + ")" : "KILL " + victim);
            } catch (SQLException e) {
                log.event("session " + victim + " already gone: " + e.getMessage());
                return false;
            }
            log.event((postgres ? "pg_terminate_backend(" : "KILL (") + victim + ") of " + sessions.size()
                    + " relay sessions");
            return true;
        }
    }

    @Override
    public void close() {
        for (Slot s : slots) {
            try {
                s.close();
            } catch (Exception e) {
                log.event("closing r" + s.index + " failed: " + e);
            }
        }
    }

    /** One relay: a child JVM or an in-process {@link Relay}, started again as a new generation. */
    final class Slot {
        final int index;
        final boolean child;
        final int batchSize;
        private int generation = -1;
        private Child process;
        private boolean stopped;
        private Relay relay;
        private HikariDataSource pool;
        private final StallingListener listener = new StallingListener();

        Slot(int index, boolean child, int batchSize) {
            this.index = index;
            this.child = child;
            this.batchSize = batchSize;
        }

        String name() {
            return "r" + index + "g" + generation + (child ? " (child)" : " (in-process)");
        }

        private String relayId() {
            return historyId + "-r" + index + "g" + generation;
        }

        synchronized boolean running() {
            return child ? process != null && process.process.isAlive() : relay != null;
        }

        synchronized void start() throws IOException {
            if (running()) {
                return;
            }
            generation++;
            String relayId = relayId();
            String user = db.kind() == TestDatabase.Kind.POSTGRESQL ? db.user() : MARIADB_RELAY_USER;
            if (child) {
                try {
                    process = spares.take(relayId, broker, address, target, relayId, db.jdbcUrl(schema), user, schema,
                            Integer.toString(batchSize));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while starting " + relayId, e);
                }
                stopped = false;
            } else {
                pool = Pools.pool(db.jdbcUrl(schema), user, OrderRelayChild.applicationName(relayId), 3);
                relay = OrderRelayChild.build(pool, broker, address, target, relayId, schema, batchSize, listener);
                relay.start();
            }
            log.event(name() + " started" + (child ? " (log " + process.log + ")" : ""));
        }

        /** SIGSTOP: the JVM freezes mid-whatever, its connections and leases left as they are. */
        synchronized boolean stop() throws Exception {
            if (!child || !running() || stopped) {
                return false;
            }
            signal("STOP");
            stopped = true;
            log.event(name() + " SIGSTOP");
            return true;
        }

        synchronized void cont() throws Exception {
            if (child && stopped && running()) {
                signal("CONT");
                log.event(name() + " SIGCONT");
            }
            stopped = false;
        }

        /** SIGKILL; the slot stays down until {@link #start()}. */
        synchronized boolean kill() throws Exception {
            if (!child || !running()) {
                return false;
            }
            process.kill();
            stopped = false;
            log.event(name() + " SIGKILL");
            return true;
        }

        /** A graceful restart: SIGTERM (the child closes its relay) or {@link Relay#close()}, then start. */
        synchronized boolean restart() throws Exception {
            if (!running() || stopped) {
                return false;
            }
            log.event(name() + " graceful stop");
            closeRelay();
            start();
            return true;
        }

        /** The next {@code published} callback of this in-process relay holds its worker for {@code stall}. */
        synchronized boolean stall(Duration stall) {
            if (child || relay == null) {
                return false;
            }
            listener.stallNanos = stall.toNanos();
            log.event(name() + " next worker callback stalls " + stall.toMillis() + " ms");
            return true;
        }

        private void closeRelay() throws Exception {
            if (child) {
                if (process != null) {
                    if (stopped) {
                        signal("CONT");
                        stopped = false;
                    }
                    process.process.destroy();
                    if (!process.process.waitFor(20, TimeUnit.SECONDS)) {
                        process.kill();
                    }
                }
            } else if (relay != null) {
                relay.close();
                pool.close();
                relay = null;
            }
        }

        synchronized void close() throws Exception {
            closeRelay();
        }

        private void signal(String signal) throws Exception {
            Process p = new ProcessBuilder("kill", "-" + signal, Long.toString(process.process.pid())).start();
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.process.pid() + " failed");
            }
        }
    }

    /** Holds the worker that reports a batch, once, for as long as asked: a GC pause or a slow callback. */
    static final class StallingListener implements RelayListener {
        volatile long stallNanos;

        @Override
        public void published(String destination, String broker, int count, Duration latency) {
            long stall = stallNanos;
            if (stall <= 0) {
                return;
            }
            stallNanos = 0;
            long until = System.nanoTime() + stall;
            for (long left = stall; left > 0; left = until - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
        }
    }
}
