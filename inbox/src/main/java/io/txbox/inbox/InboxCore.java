package io.txbox.inbox;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.KeyLogs;
import io.txbox.internal.KeyRules;
import io.txbox.internal.MissingTables;
import io.txbox.internal.SqlErrors;
import io.txbox.internal.TransactionFrame;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the inbox's modes share: the configuration, the input checks, the store, the listener,
 * the log lines and the short transactions of their own.
 */
final class InboxCore {
    static final int PURGE_BATCH = 1000;
    /** Width of the consumer column, in characters. */
    private static final int MAX_SCOPE_CHARS = 255;

    static final Logger log = LoggerFactory.getLogger(Inbox.class);

    final String consumer;
    final int maxAttempts;
    final int maxPayloadBytes;
    final Fingerprint fingerprint;
    final Duration retention;
    final Clock clock;
    final int transactionRetries;
    final InboxListener listener;
    final InboxStore store;
    final KeyLogs keyLogs;
    final TxboxTables tables;
    private final String tenantPrefix;

    InboxCore(Inbox.Builder b) {
        this.consumer = b.consumer;
        this.maxAttempts = b.maxAttempts;
        this.maxPayloadBytes = b.maxPayloadBytes;
        this.fingerprint = b.fingerprint;
        this.retention = b.retention;
        this.clock = b.clock;
        this.transactionRetries = b.transactionRetries;
        this.listener = b.listener;
        this.keyLogs = KeyLogs.of(b.hashKeysInLogs);
        this.tables = b.tables;
        long leaseMicros = TimeUnit.NANOSECONDS.toMicros(b.lease.toNanos());
        this.store = InboxStore.of(b.tables, b.maxAttempts, leaseMicros, PURGE_BATCH,
                "consumer " + Texts.quote(consumer));
        this.tenantPrefix = consumer + "@";
    }

    // ---- input checks ----

    Scope scope(String key, @Nullable String tenant) {
        KeyRules.check("message key", key);
        if (tenant == null) {
            return new Scope(consumer, key, null, keyLogs);
        }
        KeyRules.check("tenant", tenant);
        String column = tenantPrefix + tenant;
        if (column.length() > MAX_SCOPE_CHARS) {
            throw new InvalidInputException("tenant " + Texts.quote(tenant) + " is " + tenant.length()
                    + " characters; with consumer " + Texts.quote(consumer) + " the limit is "
                    + (MAX_SCOPE_CHARS - tenantPrefix.length()));
        }
        return new Scope(column, key, tenant, keyLogs);
    }

    Scope check(InboundMessage m) {
        Args.notNull(m, "message");
        Scope s = scope(m.key(), m.tenant());
        if (m.payload().length > maxPayloadBytes) {
            throw new InvalidInputException("payload of key " + keyLogs.show(m.key()) + " is " + m.payload().length
                    + " bytes, more than maxPayloadBytes " + maxPayloadBytes);
        }
        return s;
    }

    void checkResult(Scope s, byte @Nullable [] result) {
        if (result != null && result.length > maxPayloadBytes) {
            throw new InvalidInputException("result for key " + s.label() + " is " + result.length
                    + " bytes, more than maxPayloadBytes " + maxPayloadBytes);
        }
    }

    byte @Nullable [] fingerprintOf(InboundMessage m) {
        return fingerprint.of(m);
    }

    KeyReuseException keyReused(Scope s) {
        log.warn("{} - key {} reused with a different payload fingerprint; refused", consumer, s.label());
        return new KeyReuseException(consumer, s.key(), s.tenant());
    }

    // ---- transactions ----

    /** {@code e} as a txbox exception; a schema without the txbox tables says to migrate it. */
    TxboxException translate(String what, Throwable e) {
        return MissingTables.translate(what, e, tables);
    }

    @FunctionalInterface
    interface SqlWork<T> {
        T run(Connection c) throws SQLException;
    }

    /** Runs {@code work} on a connection of its own and commits it, whatever mode the pool hands out. */
    <T> T inOwnTransaction(DataSource ds, String what, SqlWork<T> work) {
        try (Connection c = ds.getConnection()) {
            return inOwnTransaction(c, what, work);
        } catch (SQLException e) {
            throw translate(what, e);
        }
    }

    /** As {@link #inOwnTransaction(DataSource, String, SqlWork)}, on a connection with no transaction open. */
    <T> T inOwnTransaction(Connection c, String what, SqlWork<T> work) {
        try {
            return c.getAutoCommit() ? work.run(c) : TransactionFrame.commit(c, InboxCore::cleanupFailed, work::run);
        } catch (SQLException e) {
            throw translate(what, e);
        }
    }

    /**
     * As {@link #inOwnTransaction(DataSource, String, SqlWork)}, retrying a serialization failure
     * or deadlock up to {@code transactionRetries} times, each time in a fresh transaction on a
     * fresh connection. A connection in auto-commit mode runs {@code work} in a transaction unless
     * the store writes in one statement, so a retry never repeats a committed write.
     */
    <T> T inOwnTransactionRetrying(DataSource ds, String what, SqlWork<T> work) {
        return retrying(what, () -> {
            try (Connection c = ds.getConnection()) {
                return attempt(c, work);
            }
        });
    }

    /** As {@link #inOwnTransactionRetrying(DataSource, String, SqlWork)}, on {@code c}, which has no transaction open. */
    <T> T inOwnTransactionRetrying(Connection c, String what, SqlWork<T> work) {
        return retrying(what, () -> attempt(c, work));
    }

    @FunctionalInterface
    private interface SqlAttempt<T> {
        T run() throws SQLException;
    }

    private <T> T retrying(String what, SqlAttempt<T> attempt) {
        for (int i = 0; ; i++) {
            try {
                return attempt.run();
            } catch (SQLException e) {
                if (i < transactionRetries && isConflict(e)) {
                    log.debug("{} hit a serialization failure or deadlock; retrying", what);
                    continue;
                }
                throw translate(what, e);
            }
        }
    }

    private <T> T attempt(Connection c, SqlWork<T> work) throws SQLException {
        if (c.getAutoCommit() && store.writesInOneStatement(c)) {
            return work.run(c); // one statement: a conflict commits nothing, so it is retried whole
        }
        return TransactionFrame.commit(c, InboxCore::cleanupFailed, work::run);
    }

    /** A serialization failure or deadlock (SQL states 40001, 40P01): the transaction may run again. */
    static boolean isConflict(Throwable e) {
        SQLException sqlError = SqlErrors.findSql(e);
        String state = sqlError == null ? null : sqlError.getSQLState();
        return "40001".equals(state) || "40P01".equals(state);
    }

    /** Opens the frame of a transaction the inbox runs on {@code c} ({@link TransactionFrame}). */
    static TransactionFrame begin(Connection c) throws SQLException {
        return TransactionFrame.begin(c, InboxCore::cleanupFailed);
    }

    private static void cleanupFailed(String step, SQLException e) {
        log.debug("{} failed: {}", step, e.toString());
    }

    // ---- listener and logs ----

    Outcome report(Outcome outcome) {
        notify(outcome.status());
        return outcome;
    }

    void notify(Outcome.Status status) {
        try {
            listener.onOutcome(consumer, status);
        } catch (RuntimeException e) {
            log.warn("{} - inbox listener failed on {}: {}", consumer, status, e.toString());
        }
    }

    void logFailure(Scope s, boolean dead, int attempts, int failures, String reason) {
        if (dead) {
            log.error("{} - key {} is DEAD after attempt {} (failure {} of {}); parked for an operator. Last error: {}",
                    consumer, s.label(), attempts, failures, maxAttempts, reason);
        } else {
            log.warn("{} - key {} failed on attempt {} (failure {} of {}): {}", consumer, s.label(), attempts,
                    failures, maxAttempts, reason);
        }
    }

    void debug(Scope s, String event) {
        if (log.isDebugEnabled()) {
            log.debug("{} - key {} {}", consumer, s.label(), event);
        }
    }

    String what(Scope s) {
        return "consumer " + Texts.quote(consumer) + " key " + s.label();
    }

    String what(String action, Scope s) {
        return "inbox " + action + " for " + what(s);
    }
}
