package io.txbox.outbox;

import static io.txbox.internal.mariadb.schema.tables.TxboxOutbox.TXBOX_OUTBOX;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;
import java.sql.SQLException;

/**
 * The outbox's {@code send} on MariaDB 10.6+ and MySQL 8.0+, the counterpart of {@link
 * OutboxImpl}'s {@code INSERT ... ON CONFLICT (step_key) DO NOTHING}.
 *
 * <p>It is a plain {@code INSERT}. A step key that is already there fails the statement with
 * error 1062 ({@link #isDuplicateStepKey}), which on MariaDB and MySQL rolls back that statement
 * only: the caller's transaction goes on, and the send reports "not emitted". A concurrent send of
 * the same step key waits on the unique index until the first transaction ends, then fails with
 * 1062 (first committed) or inserts (first rolled back). Neither {@code INSERT IGNORE} (which
 * would also turn a too-long value into a silent truncation) nor {@code ON DUPLICATE KEY UPDATE}
 * (whose affected-rows count depends on the driver's found-rows flag, so "inserted" and "already
 * there" can look the same) says it as reliably.
 *
 * <p>Headers travel as JSON arrays of strings ({@code header_names}, {@code header_values}).
 * {@code available_at} is {@code COALESCE(at, CURRENT_TIMESTAMP(6)) + delay}: MariaDB has no
 * transaction-start clock, so the statement's time stands in for PostgreSQL's.
 */
final class MariaDbOutboxSql {
    /** MariaDB / MySQL ER_DUP_ENTRY. */
    static final int DUPLICATE_ENTRY = 1062;

    /**
     * Bind order: step_key, original_key, destination, routing_key, lane, payload, header_names
     * (json), header_values (json), content_type, traceparent, tracestate, available at (or
     * null), delay in microseconds.
     */
    final String send;
    private final String stepKeyIndex;

    MariaDbOutboxSql(TxboxTables tables, Dialect dialect) {
        String t = Jooq.renderer(tables, dialect).render(TXBOX_OUTBOX);
        stepKeyIndex = tables.prefix() + "outbox_step_key_uq";
        send = "INSERT INTO " + t + " (step_key, original_key, destination, routing_key, lane, payload, header_names,"
                + " header_values, content_type, traceparent, tracestate, available_at)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, CURRENT_TIMESTAMP(6)) + INTERVAL ? MICROSECOND)";
    }

    /** Whether {@code e} is the send's own duplicate step key, and nothing else. */
    boolean isDuplicateStepKey(SQLException e) {
        String message = e.getMessage();
        return e.getErrorCode() == DUPLICATE_ENTRY && message != null && message.contains(stepKeyIndex);
    }
}
