package io.txbox.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.BiConsumer;

/**
 * The one home for the frame around a transaction txbox runs on a connection it borrowed: auto-commit
 * off for the frame's span, and on {@link #close()} whatever the work left open rolled back and
 * auto-commit put back as it was. The work ends its transactions itself ({@link #commit()},
 * {@link #rollback()}, or the raw connection for transactions in between); a return or an
 * exception before that rolls back. Clean-up failures are handed to the caller to log with its
 * own context, never thrown (see {@link Connections}).
 *
 * <pre>{@code
 * try (Connection c = ds.getConnection(); TransactionFrame tx = TransactionFrame.begin(c, log)) {
 *     ... work on c ...
 *     tx.commit();
 * }
 * }</pre>
 */
public final class TransactionFrame implements AutoCloseable {
    private final Connection c;
    private final boolean autoCommit;
    private final BiConsumer<String, SQLException> cleanupFailed;
    private boolean ended;

    private TransactionFrame(Connection c, boolean autoCommit, BiConsumer<String, SQLException> cleanupFailed) {
        this.c = c;
        this.autoCommit = autoCommit;
        this.cleanupFailed = cleanupFailed;
    }

    /**
     * Opens the frame on {@code c}, which has no transaction open, switching auto-commit off if
     * it is on. {@code cleanupFailed} hears a failed rollback ({@code "rollback"}) or restore
     * ({@code "restoring auto-commit"}) at close.
     */
    public static TransactionFrame begin(Connection c, BiConsumer<String, SQLException> cleanupFailed)
            throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        if (autoCommit) {
            c.setAutoCommit(false);
        }
        return new TransactionFrame(c, autoCommit, cleanupFailed);
    }

    /** Runs {@code work} in one transaction on {@code c} and commits it; rolls back if it throws. */
    public static <T> T commit(Connection c, BiConsumer<String, SQLException> cleanupFailed, Work<T> work)
            throws SQLException {
        try (TransactionFrame tx = begin(c, cleanupFailed)) {
            T result = work.run(c);
            tx.commit();
            return result;
        }
    }

    /** Commits; the frame then leaves the connection as it is. */
    public void commit() throws SQLException {
        c.commit();
        ended = true;
    }

    /** Rolls back; the frame then leaves the connection as it is. */
    public void rollback() throws SQLException {
        c.rollback();
        ended = true;
    }

    /** Rolls back now, before the work goes on to answer; a failure goes to the clean-up listener. */
    public void rollbackQuietly() {
        ended = true;
        SQLException e = Connections.rollbackQuietly(c);
        if (e != null) {
            cleanupFailed.accept("rollback", e);
        }
    }

    /** Rolls back what is still open unless the work ended it, and restores auto-commit. Never throws. */
    @Override
    public void close() {
        if (!ended) {
            rollbackQuietly();
        }
        if (autoCommit) {
            SQLException e = Connections.restoreAutoCommit(c);
            if (e != null) {
                cleanupFailed.accept("restoring auto-commit", e);
            }
        }
    }

    /** Work on the frame's connection. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection c) throws SQLException;
    }
}
