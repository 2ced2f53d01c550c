package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.RetryableException;
import io.txbox.TxboxException;
import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import org.junit.jupiter.api.Test;

/** Which database errors a caller may retry: PostgreSQL's SQL states and MariaDB's / MySQL's codes. */
class SqlErrorsTest {
    @Test
    void translate_mariadbDeadlock_isRetryableAndKeepsStateAndCode() {
        var deadlock = new SQLTransactionRollbackException(
                "Deadlock found when trying to get lock; try restarting transaction", "40001", 1213);
        TxboxException e = SqlErrors.translate("receive", deadlock);
        assertThat(e).isInstanceOf(RetryableException.class);
        assertThat(e.sqlState()).isEqualTo("40001");
        assertThat(e.getMessage()).contains("receive failed").contains("[SQL state 40001, error 1213]");
    }

    @Test
    void translate_mariadbLockWaitTimeout_isRetryableThoughItsStateIsGeneric() {
        var timeout = new SQLException("Lock wait timeout exceeded; try restarting transaction", "HY000", 1205);
        assertThat(SqlErrors.translate("claim", timeout)).isInstanceOf(RetryableException.class);
    }

    @Test
    void translate_mariadbConnectionLost_isRetryable() {
        assertThat(SqlErrors.translate("send", new SQLException("Connection killed", "70100", 1927)))
                .isInstanceOf(RetryableException.class);
        assertThat(SqlErrors.translate("send", new SQLException("Socket error", "08000", 0)))
                .isInstanceOf(RetryableException.class);
        assertThat(SqlErrors.translate("send", new SQLException("Server has gone away", "HY000", 2006)))
                .isInstanceOf(RetryableException.class);
    }

    @Test
    void translate_mariadbDuplicateKeyOrSyntaxError_isNotRetryable() {
        var duplicate = new SQLException("Duplicate entry 'k' for key 'PRIMARY'", "23000", 1062);
        var syntax = new SQLException("You have an error in your SQL syntax", "42000", 1064);
        assertThat(SqlErrors.translate("send", duplicate)).isNotInstanceOf(RetryableException.class);
        assertThat(SqlErrors.translate("send", syntax)).isNotInstanceOf(RetryableException.class);
    }

    @Test
    void translate_postgresStates_unchanged() {
        assertThat(SqlErrors.translate("x", new SQLException("deadlock detected", "40P01")))
                .isInstanceOf(RetryableException.class);
        assertThat(SqlErrors.translate("x", new SQLException("unique violation", "23505")))
                .isNotInstanceOf(RetryableException.class)
                .hasMessageEndingWith("[SQL state 23505]");
    }

    @Test
    void isRetryable_nullException_isFalse() {
        assertThat(SqlErrors.isRetryable((SQLException) null)).isFalse();
        assertThat(SqlErrors.isRetryable((String) null)).isFalse();
    }
}
