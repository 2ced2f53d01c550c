package io.txbox.internal;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * The one home for the rule that a call promising to write "in the caller's transaction" gets
 * a transaction: on a connection in auto-commit mode its write would commit on its own,
 * whatever then happens to the caller's business writes.
 */
public final class Transactions {
    private Transactions() {}

    /**
     * Throws {@link IllegalStateException} naming {@code call} and the fix when {@code tx} is in
     * auto-commit mode. Reads the driver's local state only: no round trip.
     */
    public static void requireTransaction(Connection tx, String call) {
        boolean autoCommit;
        try {
            autoCommit = tx.getAutoCommit();
        } catch (SQLException e) {
            throw SqlErrors.translate(call, e);
        }
        if (autoCommit) {
            throw new IllegalStateException(call + " writes in the caller's transaction, but the connection is in "
                    + "auto-commit mode, so the write would commit on its own; nothing was written. Call "
                    + "setAutoCommit(false) on the connection first and commit() after the business writes.");
        }
    }
}
