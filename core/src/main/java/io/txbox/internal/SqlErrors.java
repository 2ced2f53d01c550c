package io.txbox.internal;

import io.txbox.RetryableException;
import io.txbox.TxboxException;
import java.sql.SQLException;
import java.sql.SQLTransientException;
import java.sql.SQLRecoverableException;
import io.txbox.internal.shaded.jooq.exception.DataAccessException;

/**
 * Turns JDBC and jOOQ failures into txbox exceptions, marking the ones worth retrying. Knows
 * PostgreSQL's SQL states and MariaDB's / MySQL's error codes; a PostgreSQL driver always
 * reports error code 0, so the two never overlap.
 */
public final class SqlErrors {
    /** MariaDB / MySQL ER_LOCK_DEADLOCK: InnoDB chose this transaction as the deadlock victim. */
    static final int MYSQL_DEADLOCK = 1213;
    /** MariaDB / MySQL ER_LOCK_WAIT_TIMEOUT: innodb_lock_wait_timeout ran out. */
    static final int MYSQL_LOCK_WAIT_TIMEOUT = 1205;

    private SqlErrors() {}

    /** SQL states after which the whole transaction may be retried. */
    public static boolean isRetryable(String sqlState) {
        if (sqlState == null) {
            return false;
        }
        return sqlState.equals("40001") // serialization_failure; MariaDB/MySQL deadlock (1213)
                || sqlState.equals("40P01") // deadlock_detected
                || sqlState.equals("55P03") // lock_not_available (lock_timeout)
                || sqlState.equals("57014") // query_canceled (statement_timeout)
                || sqlState.equals("57P01") // admin_shutdown (pg_terminate_backend)
                || sqlState.equals("57P02") // crash_shutdown
                || sqlState.equals("57P03") // cannot_connect_now
                || sqlState.equals("70100") // MariaDB/MySQL query interrupted (KILL QUERY, max_statement_time)
                || sqlState.startsWith("08"); // connection exceptions
    }

    /**
     * Whether the transaction that raised {@code e} may be retried as a whole: by its SQL state,
     * or by a MariaDB / MySQL error code whose SQL state is the generic {@code HY000}.
     */
    public static boolean isRetryable(SQLException e) {
        if (e == null) {
            return false;
        }
        return isRetryable(e.getSQLState()) || isRetryableMysqlCode(e.getErrorCode());
    }

    private static boolean isRetryableMysqlCode(int code) {
        return code == MYSQL_DEADLOCK
                || code == MYSQL_LOCK_WAIT_TIMEOUT
                || code == 1317 // ER_QUERY_INTERRUPTED
                || code == 1969 // MariaDB ER_STATEMENT_TIMEOUT (max_statement_time)
                || code == 3024 // MySQL ER_QUERY_TIMEOUT (max_execution_time)
                || code == 3572 // MySQL ER_LOCK_NOWAIT
                || code == 1053 // ER_SERVER_SHUTDOWN
                || code == 1927 // MariaDB ER_CONNECTION_KILLED
                || code == 2006 // CR_SERVER_GONE_ERROR
                || code == 2013; // CR_SERVER_LOST
    }

    public static TxboxException translate(String what, Throwable e) {
        if (e instanceof TxboxException te) {
            return te;
        }
        SQLException sql = findSql(e);
        String state = sql == null ? null : sql.getSQLState();
        String code = sql == null || sql.getErrorCode() == 0 ? "" : ", error " + sql.getErrorCode();
        String message = what + " failed: " + (sql != null ? sql.getMessage() : String.valueOf(e.getMessage()))
                + (state != null ? " [SQL state " + state + code + "]" : "");
        if (isRetryable(sql) || sql instanceof SQLTransientException || sql instanceof SQLRecoverableException) {
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
