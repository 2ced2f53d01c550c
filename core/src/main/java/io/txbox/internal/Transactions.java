package io.txbox.internal;

import io.txbox.TxboxException;
import java.lang.reflect.Method;
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

    /**
     * Throws {@link TxboxException} naming {@code call} when {@code tx} sits in a PostgreSQL
     * transaction that an error aborted: one that refuses every further statement and whose
     * {@code COMMIT} only rolls back, which pgjdbc reports as success. Called after a handler
     * returned normally, so a handler that caught an SQL error is a failure, never a message
     * counted as done with nothing committed. Reads pgjdbc's local state: no round trip; other
     * drivers are never in that state.
     */
    public static void requireNotAborted(Connection tx, String call) {
        if (aborted(tx)) {
            throw new TxboxException(call + ": the handler returned normally, but an SQL error it caught had aborted the "
                    + "transaction, so nothing of it can commit (PostgreSQL turns the COMMIT into a ROLLBACK); it is "
                    + "counted as a failed attempt. Let the SQLException propagate, or roll back to a savepoint "
                    + "before going on.");
        }
    }

    private static final Class<?> PG_CONNECTION;
    private static final Method PG_TRANSACTION_STATE;

    static {
        Class<?> type = null;
        Method state = null;
        try {
            type = Class.forName("org.postgresql.core.BaseConnection", false, Transactions.class.getClassLoader());
            state = type.getMethod("getTransactionState");
        } catch (ReflectiveOperationException | LinkageError e) {
            type = null; // no pgjdbc: no PostgreSQL connection to ask
        }
        PG_CONNECTION = type;
        PG_TRANSACTION_STATE = state;
    }

    private static boolean aborted(Connection tx) {
        if (PG_CONNECTION == null) {
            return false;
        }
        try {
            if (!tx.isWrapperFor(PG_CONNECTION)) {
                return false;
            }
            Object state = PG_TRANSACTION_STATE.invoke(tx.unwrap(PG_CONNECTION));
            return state != null && "FAILED".equals(state.toString());
        } catch (SQLException | ReflectiveOperationException | RuntimeException e) {
            return false; // a closed or foreign connection: the commit that follows reports it
        }
    }
}
