package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * The database-specific SQL of the fault tests, in one place: sleeping, statement and lock
 * timeouts and the errors they raise, killing a session in the middle of a statement, and
 * generated keys.
 */
enum FaultSql {
    POSTGRESQL {
        @Override
        String sleep(int seconds, String marker) {
            return "SELECT pg_sleep(" + seconds + ") /* " + marker + " */";
        }

        @Override
        void executeWithStatementTimeout(Connection tx, Duration timeout, String sql) throws SQLException {
            try (Statement s = tx.createStatement()) {
                s.execute("SET LOCAL statement_timeout = '" + timeout.toMillis() + "ms'");
                s.execute(sql);
            }
        }

        @Override
        void executeWithLockTimeout(Connection tx, Duration timeout, String sql) throws SQLException {
            try (Statement s = tx.createStatement()) {
                s.execute("SET LOCAL lock_timeout = '" + timeout.toMillis() + "ms'");
                s.execute(sql);
            }
        }

        @Override
        String sessionStatementTimeout(Duration timeout) {
            return "SET statement_timeout = '" + timeout.toMillis() + "ms'";
        }

        @Override
        String sessionLockTimeout(Duration timeout) {
            return "SET lock_timeout = '" + timeout.toMillis() + "ms'";
        }

        @Override
        String statementTimeoutState() {
            return "57014"; // query_canceled
        }

        @Override
        String lockTimeoutState() {
            return "55P03"; // lock_not_available
        }

        @Override
        String statementTimeoutMessage() {
            return "statement timeout";
        }

        @Override
        String lockTimeoutMessage() {
            return "lock timeout";
        }

        @Override
        long findSession(Connection admin, TestDatabase db, String applicationName, String queryPart) throws SQLException {
            try (PreparedStatement ps = admin.prepareStatement(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = ? AND state = 'active'"
                            + " AND position(? in query) > 0")) {
                ps.setString(1, applicationName);
                ps.setString(2, queryPart);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getLong(1) : 0;
                }
            }
        }

        @Override
        String generatedKey() {
            return "bigserial PRIMARY KEY";
        }

        @Override
        void kill(Connection admin, long session) throws SQLException {
            try (PreparedStatement ps = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
                ps.setInt(1, Math.toIntExact(session));
                ps.execute();
            }
        }
    },

    MARIADB {
        @Override
        String sleep(int seconds, String marker) {
            // SELECT, not DO: an interrupted SELECT SLEEP fails, an interrupted DO SLEEP returns quietly
            return "SELECT SLEEP(" + seconds + ") /* " + marker + " */";
        }

        @Override
        void executeWithStatementTimeout(Connection tx, Duration timeout, String sql) throws SQLException {
            try (Statement s = tx.createStatement()) {
                s.execute("SET STATEMENT max_statement_time = " + seconds(timeout) + " FOR " + sql);
            }
        }

        @Override
        void executeWithLockTimeout(Connection tx, Duration timeout, String sql) throws SQLException {
            try (Statement s = tx.createStatement()) {
                s.execute("SET STATEMENT innodb_lock_wait_timeout = " + wholeSeconds(timeout) + " FOR " + sql);
            }
        }

        @Override
        String sessionStatementTimeout(Duration timeout) {
            return "SET max_statement_time = " + seconds(timeout);
        }

        @Override
        String sessionLockTimeout(Duration timeout) {
            return "SET innodb_lock_wait_timeout = " + wholeSeconds(timeout);
        }

        @Override
        String statementTimeoutState() {
            return "70100"; // error 1969, ER_STATEMENT_TIMEOUT
        }

        @Override
        String lockTimeoutState() {
            return "HY000"; // error 1205, ER_LOCK_WAIT_TIMEOUT, has no SQL state of its own
        }

        @Override
        String statementTimeoutMessage() {
            return "max_statement_time exceeded";
        }

        @Override
        String lockTimeoutMessage() {
            return "Lock wait timeout exceeded";
        }

        @Override
        long findSession(Connection admin, TestDatabase db, String applicationName, String queryPart) throws SQLException {
            // the process list knows no application name; the class's own database and the marker single it out
            try (PreparedStatement ps = admin.prepareStatement(
                    "SELECT id FROM information_schema.processlist WHERE db = ? AND command = 'Query'"
                            + " AND id <> CONNECTION_ID() AND instr(info, ?) > 0")) {
                ps.setString(1, db.schema());
                ps.setString(2, queryPart);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getLong(1) : 0;
                }
            }
        }

        @Override
        String generatedKey() {
            return "bigint AUTO_INCREMENT PRIMARY KEY";
        }

        @Override
        void kill(Connection admin, long session) throws SQLException {
            try (Statement s = admin.createStatement()) {
                s.execute("KILL CONNECTION " + session);
            }
        }
    };

    static FaultSql of(TestDatabase db) {
        return switch (db.kind()) {
            case POSTGRESQL -> POSTGRESQL;
            case MARIADB -> MARIADB;
        };
    }

    /** A statement that sleeps {@code seconds} and carries {@code marker} in its text, to be found while it runs. */
    abstract String sleep(int seconds, String marker);

    /** Runs {@code sql} in the caller's transaction, cancelled with an error after {@code timeout}. */
    abstract void executeWithStatementTimeout(Connection tx, Duration timeout, String sql) throws SQLException;

    /**
     * Runs {@code sql} in the caller's transaction, giving up with an error when it waits for a row
     * lock longer than {@code timeout} (MariaDB counts whole seconds, at least one).
     */
    abstract void executeWithLockTimeout(Connection tx, Duration timeout, String sql) throws SQLException;

    /** A connection's init SQL that cancels each of its statements after {@code timeout}. */
    abstract String sessionStatementTimeout(Duration timeout);

    /** A connection's init SQL that fails its row lock waits after {@code timeout} (whole seconds on MariaDB). */
    abstract String sessionLockTimeout(Duration timeout);

    /** The SQL state of a statement timeout. */
    abstract String statementTimeoutState();

    /** The SQL state of a lock timeout. */
    abstract String lockTimeoutState();

    /** What the database's message says of a statement timeout. */
    abstract String statementTimeoutMessage();

    /** What the database's message says of a lock timeout. */
    abstract String lockTimeoutMessage();

    /** The session of {@code applicationName} on {@code db} running a statement containing {@code queryPart}, or 0. */
    abstract long findSession(Connection admin, TestDatabase db, String applicationName, String queryPart)
            throws SQLException;

    /** A column definition for a key the database numbers in insert order. */
    abstract String generatedKey();

    /** Ends {@code session} as an administrator would: its transaction rolls back and its client loses the connection. */
    abstract void kill(Connection admin, long session) throws SQLException;

    /**
     * Waits until a session of {@code applicationName} on {@code db} runs a statement that contains
     * {@code queryPart}, then kills it.
     */
    long killWhen(TestDatabase db, String applicationName, String queryPart, Duration timeout) {
        DataSource admin = db.dataSource();
        long[] session = {0};
        await().atMost(timeout).pollInterval(Duration.ofMillis(5)).until(() -> {
            try (Connection c = admin.getConnection()) {
                session[0] = findSession(c, db, applicationName, queryPart);
            }
            return session[0] != 0;
        });
        try (Connection c = admin.getConnection()) {
            kill(c, session[0]);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return session[0];
    }

    private static String seconds(Duration d) {
        return String.format(java.util.Locale.ROOT, "%.3f", d.toMillis() / 1000.0);
    }

    private static long wholeSeconds(Duration d) {
        return Math.max(1, (d.toMillis() + 999) / 1000);
    }
}
