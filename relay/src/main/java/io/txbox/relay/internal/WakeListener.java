package io.txbox.relay.internal;

import io.txbox.internal.WakeChannel;
import io.txbox.relay.Relay;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * The relay's ear on PostgreSQL: one connection of the DataSource that {@code LISTEN}s on the
 * outbox table's {@link WakeChannel} and wakes the workers for each notification, so a send
 * committed in another process is claimed at once. A hint only: the workers' poll stays the
 * guarantee. A lost connection is logged once per outage and opened again with backoff; the
 * workers are woken once it is back, for the rows sent while it was down.
 */
final class WakeListener implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Relay.class);
    /** How long one wait for notifications blocks (reading the socket, no round trip); bounds how late a stop is seen. */
    static final int WAIT_MILLIS = 250;
    /** How often a quiet connection is checked: a connection dropped without a word (a NAT's idle timeout) reads as silence. */
    private static final long CHECK_NANOS = 30_000_000_000L;
    private static final long FIRST_RETRY_MILLIS = 100;
    private static final long MAX_RETRY_MILLIS = 5_000;

    private final RelaySettings settings;
    private final Runnable wake;
    private final String listenSql;
    private final Object signal = new Object();
    private volatile boolean running = true;
    private volatile @Nullable Connection connection;
    private @Nullable Thread thread;

    WakeListener(RelaySettings settings, Runnable wake) {
        this.settings = settings;
        this.wake = wake;
        this.listenSql = WakeChannel.listenSql(settings.tables());
    }

    void start() {
        Thread t = new Thread(this, "txbox-" + settings.relayId() + "-listen");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    @Override
    public void run() {
        MDC.put(Relay.MDC_KEY, settings.relayId());
        int failures = 0;
        try {
            while (running) {
                try {
                    PGConnection pg = listen();
                    if (pg == null) {
                        log.warn("{} - cannot listen for sends: the DataSource's connections are not PostgreSQL JDBC"
                                + " driver connections; the workers poll every {}", settings.relayId(), settings.pollInterval());
                        return;
                    }
                    if (failures > 0) {
                        log.info("{} - listening for sends on channel {} again", settings.relayId(), WakeChannel.of(settings.tables()));
                        wake.run(); // rows sent while it was down
                    }
                    failures = 0;
                    long checked = System.nanoTime();
                    while (running) {
                        PGNotification[] received = pg.getNotifications(WAIT_MILLIS);
                        if (received != null && received.length > 0) {
                            wake.run();
                            checked = System.nanoTime();
                        } else if (System.nanoTime() - checked > CHECK_NANOS) {
                            check();
                            checked = System.nanoTime();
                        }
                    }
                    unlisten();
                } catch (SQLException | RuntimeException e) {
                    closeConnection();
                    if (!running) {
                        break;
                    }
                    long pause = Math.min(MAX_RETRY_MILLIS, FIRST_RETRY_MILLIS << Math.min(failures, 10));
                    if (failures++ == 0) {
                        log.warn("{} - listening for sends on channel {} failed: {}; the workers poll every {} until it"
                                + " listens again (retrying with backoff up to {} ms)", settings.relayId(),
                                WakeChannel.of(settings.tables()), e.toString(), settings.pollInterval(), MAX_RETRY_MILLIS);
                    }
                    pause(pause);
                }
            }
        } finally {
            closeConnection();
            MDC.remove(Relay.MDC_KEY);
        }
    }

    /**
     * Opens the connection and runs LISTEN on it (auto-commit, so it takes effect at once); null if
     * the connection is not pgjdbc's.
     */
    private @Nullable PGConnection listen() throws SQLException {
        Connection c = settings.dataSource().getConnection();
        connection = c;
        if (!c.isWrapperFor(PGConnection.class)) {
            return null;
        }
        if (!c.getAutoCommit()) {
            c.setAutoCommit(true);
        }
        try (Statement s = c.createStatement()) {
            s.execute(listenSql);
        }
        return c.unwrap(PGConnection.class);
    }

    /** One round trip on a quiet connection; a notification it brings in is read by the next wait. */
    private void check() throws SQLException {
        Connection c = connection;
        if (c == null || !c.isValid(5)) {
            throw new SQLException("the listening connection did not answer a check within 5 s", "08006");
        }
    }

    /** Leaves the pooled connection as it found it: a listening one would gather notifications for whoever borrows it next. */
    private void unlisten() throws SQLException {
        Connection c = connection;
        if (c != null) {
            try (Statement s = c.createStatement()) {
                s.execute("UNLISTEN *");
            }
        }
    }

    private void pause(long millis) {
        long end = System.nanoTime() + millis * 1_000_000L;
        synchronized (signal) {
            long left;
            while (running && (left = end - System.nanoTime()) > 0) {
                try {
                    signal.wait(Math.max(1, left / 1_000_000L));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** Asks the thread to stop: it sees it within {@link #WAIT_MILLIS}, then gives its connection back. */
    void stop() {
        running = false;
        synchronized (signal) {
            signal.notifyAll();
        }
    }

    /** Waits at most {@code millis} for the thread to end after {@link #stop()}. */
    void join(long millis) {
        Thread t = thread;
        if (t != null) {
            try {
                t.join(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void closeConnection() {
        Connection c = connection;
        connection = null;
        if (c != null) {
            try {
                c.close(); // a pool discards a broken connection
            } catch (SQLException | RuntimeException ignored) {
                // nothing more to do
            }
        }
    }
}
