package io.txbox.internal;

import io.txbox.RetryableException;
import io.txbox.TxboxException;
import java.sql.SQLException;
import java.sql.SQLTransientException;
import java.sql.SQLRecoverableException;
import io.txbox.internal.shaded.jooq.exception.DataAccessException;

/** Turns JDBC and jOOQ failures into txbox exceptions, marking the ones worth retrying. */
public final class SqlErrors {
    private SqlErrors() {}

    /** SQL states after which the whole transaction may be retried. */
    public static boolean isRetryable(String sqlState) {
        if (sqlState == null) {
            return false;
        }
        return sqlState.equals("40001") // serialization_failure
                || sqlState.equals("40P01") // deadlock_detected
                || sqlState.equals("55P03") // lock_not_available (lock_timeout)
                || sqlState.equals("57014") // query_canceled (statement_timeout)
                || sqlState.equals("57P01") // admin_shutdown (pg_terminate_backend)
                || sqlState.equals("57P02") // crash_shutdown
                || sqlState.equals("57P03") // cannot_connect_now
                || sqlState.startsWith("08"); // connection exceptions
    }

    public static TxboxException translate(String what, Throwable e) {
        if (e instanceof TxboxException te) {
            return te;
        }
        SQLException sql = findSql(e);
        String state = sql == null ? null : sql.getSQLState();
        String message = what + " failed: " + (sql != null ? sql.getMessage() : String.valueOf(e.getMessage()))
                + (state != null ? " [SQL state " + state + "]" : "");
        if (isRetryable(state) || sql instanceof SQLTransientException || sql instanceof SQLRecoverableException) {
            return new RetryableException(message, e, state);
        }
        return new TxboxException(message, e, state);
    }

    public static SQLException findSql(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s) {
                return s;
            }
            if (t instanceof DataAccessException dae && dae.getCause() instanceof SQLException s) {
                return s;
            }
        }
        return null;
    }
}
