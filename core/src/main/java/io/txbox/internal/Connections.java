package io.txbox.internal;

import java.sql.Connection;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * Best-effort clean-up of a connection after a failure. A failure here must never hide the one
 * that matters (after a lost connection, a retryable 57P01 or 08xxx), so it is returned for
 * the caller to log with its own context, never thrown; the pool resets the connection anyway.
 */
public final class Connections {
    private Connections() {}

    /** Rolls {@code c} back; returns the failure, if any, instead of throwing it. */
    public static @Nullable SQLException rollbackQuietly(Connection c) {
        try {
            c.rollback();
            return null;
        } catch (SQLException e) {
            return e;
        }
    }

    /**
     * Puts {@code c} back in auto-commit mode unless it is closed; returns the failure, if any,
     * instead of throwing it.
     */
    public static @Nullable SQLException restoreAutoCommit(Connection c) {
        try {
            if (!c.isClosed()) {
                c.setAutoCommit(true);
            }
            return null;
        } catch (SQLException e) {
            return e;
        }
    }
}
