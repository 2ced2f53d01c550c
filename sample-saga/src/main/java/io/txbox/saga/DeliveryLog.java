package io.txbox.saga;

import io.txbox.inbox.InboxListener;
import io.txbox.inbox.Outcome;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes every inbox outcome of one service into its {@code deliveries} table: one row per
 * delivery, with the consumer and the outcome the inbox reported (PROCESSED, DUPLICATE, ...).
 * The report counts duplicate deliveries from these rows.
 *
 * <p>The rows are written on a connection of its own, outside every business transaction, in
 * small batches a fraction of a second later: the listener runs inside the inbox's transaction
 * and must neither block it nor borrow from the service's pool.
 */
final class DeliveryLog implements InboxListener, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DeliveryLog.class);

    private record Entry(String consumer, Outcome.Status status) {}

    private final LinkedBlockingQueue<Entry> queue = new LinkedBlockingQueue<>();
    private final String insert;
    private final SagaSettings settings;
    private final Thread writer;
    private volatile boolean closing;

    DeliveryLog(SagaSettings settings, String schema) {
        this.settings = settings;
        this.insert = "INSERT INTO " + schema + ".deliveries (consumer, outcome) VALUES (?, ?)";
        this.writer = new Thread(this::run, "saga-deliveries-" + schema);
        writer.setDaemon(true);
        writer.start();
    }

    static String ddl(String schema) {
        return "CREATE TABLE " + schema + ".deliveries (id bigserial PRIMARY KEY, consumer text NOT NULL,"
                + " outcome text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())";
    }

    @Override
    public void onOutcome(String consumer, Outcome.Status status) {
        queue.add(new Entry(consumer, status));
    }

    private void run() {
        Connection c = null;
        List<Entry> batch = new ArrayList<>();
        while (!closing || !queue.isEmpty()) {
            try {
                Entry first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, 999);
                if (c == null || c.isClosed()) {
                    c = DriverManager.getConnection(settings.jdbcUrl(), settings.jdbcUser(), settings.jdbcPassword());
                }
                try (PreparedStatement ps = c.prepareStatement(insert)) {
                    for (Entry e : batch) {
                        ps.setString(1, e.consumer());
                        ps.setString(2, e.status().name());
                        ps.addBatch();
                    }
                    ps.executeBatch();
                }
                batch.clear();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (SQLException e) {
                log.warn("cannot write {} delivery rows, will retry: {}", batch.size(), e.toString());
                queue.addAll(batch);
                batch.clear();
                c = null;
                sleepQuietly();
            }
        }
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing anyway
            }
        }
    }

    private static void sleepQuietly() {
        try {
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Writes what is queued, then stops. */
    @Override
    public void close() {
        closing = true;
        try {
            writer.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
