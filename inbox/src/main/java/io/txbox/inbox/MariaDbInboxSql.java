package io.txbox.inbox;

import static io.txbox.internal.mariadb.schema.tables.TxboxInbox.TXBOX_INBOX;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;

/**
 * The inbox's statements on MariaDB 10.6+ and MySQL 8.0+, the counterparts of {@link InboxSql}'s
 * {@code receive} and {@code read}. Rendered once per inbox; the table name comes from the
 * generated MariaDB table under the configured schema and prefix.
 *
 * <p><b>receive without a SELECT before the INSERT.</b> {@link #receive} is one {@code INSERT ...
 * ON DUPLICATE KEY UPDATE}: a first delivery inserts the entry; on a duplicate key InnoDB takes
 * an exclusive lock on the existing row (waiting, at any isolation level, for a transaction that
 * inserted or changed it to end) and runs the update. The update takes the entry over only when
 * it may run again (FAILED, or PROCESSING with an expired lease) and the fingerprints agree;
 * then it writes this call's random {@code token} into {@code received_txid}. MariaDB and MySQL
 * have no {@code RETURNING} for this statement, and the affected-rows count depends on the
 * driver's found-rows flag, so {@link #classify} reads the row back with {@code FOR UPDATE}: the
 * lock is already held, and a locking read sees the latest committed row (a plain read at
 * REPEATABLE READ would see the transaction's snapshot, which may predate the entry). The entry
 * is FIRST for this call exactly when its token is there.
 *
 * <p>Assignments of {@code ON DUPLICATE KEY UPDATE} run left to right and see the values set
 * before them, so {@code received_txid} is decided first and every later column follows it.
 * Parameters are bound again instead of {@code VALUES(col)}, which MySQL 8.0.20+ deprecates.
 *
 * <p><b>Two-phase claims.</b> {@link #claim} is the same shape: a new entry is PROCESSING with
 * a lease that ends {@code leaseMicros} after the database's {@code CURRENT_TIMESTAMP(6)}; an
 * entry that may run again is taken over, counting a failure when its lease had run out, and
 * parked as DEAD when that failure uses up {@code maxAttempts}. The fencing token is the
 * attempt number together with the lease end, which is read and compared as microseconds since
 * the epoch ({@code UNIX_TIMESTAMP}), so neither the JVM's nor the session's time zone can make
 * two equal instants look different. {@link #complete} writes only while both still match.
 */
final class MariaDbInboxSql {
    /** Bind order: consumer, key, fingerprint, token, fingerprint, fingerprint, token x 5. */
    final String receive;
    /**
     * Bind order: token, consumer, key. Columns: first (1 when this call's token is the entry's),
     * status, fingerprint, result, result_status, result_header_names (json), result_header_values
     * (json), attempts, last_error, lease running (1/0/null).
     */
    final String classify;

    /**
     * Bind order: consumer, key, fingerprint, token, fingerprint, fingerprint, token x 6. Read the
     * outcome with {@link #classifyClaim}.
     */
    final String claim;
    /** Bind order: token, consumer, key. Columns: first, status, attempts, failures, lease end (epoch microseconds), last_error. */
    final String classifyClaim;
    /** Bind order: result, consumer, key, token (attempts), lease end (epoch microseconds). */
    final String complete;

    MariaDbInboxSql(TxboxTables tables, Dialect dialect, int maxAttempts, long leaseMicros) {
        String t = Jooq.renderer(tables, dialect).render(TXBOX_INBOX);
        String now = "CURRENT_TIMESTAMP(6)";
        String retryable = "(status = 'FAILED' OR (status = 'PROCESSING' AND lease_until < " + now + "))";
        String sameFingerprint = "(fingerprint IS NULL OR ? IS NULL OR fingerprint = ?)";
        String mine = "received_txid <=> ?";
        receive = "INSERT INTO " + t + " (consumer, message_key, status, fingerprint, attempts, completed_at, received_txid)"
                + " VALUES (?, ?, 'COMPLETED', ?, 1, " + now + ", ?)"
                + " ON DUPLICATE KEY UPDATE"
                + " received_txid = IF(" + retryable + " AND " + sameFingerprint + ", ?, received_txid),"
                + " attempts = IF(" + mine + ", attempts + 1, attempts),"
                + " status = IF(" + mine + ", 'COMPLETED', status),"
                + " completed_at = IF(" + mine + ", " + now + ", completed_at),"
                + " lease_until = IF(" + mine + ", NULL, lease_until)";
        classify = "SELECT " + mine + ", status, fingerprint, result, result_status, result_header_names,"
                + " result_header_values, attempts, last_error, lease_until > " + now
                + " FROM " + t + " WHERE consumer = ? AND message_key = ? FOR UPDATE";

        String leaseEnd = now + " + INTERVAL " + leaseMicros + " MICROSECOND";
        // after failures is counted and status decided (left to right), status = 'DEAD' means
        // this takeover used up the attempts
        claim = "INSERT INTO " + t + " (consumer, message_key, status, fingerprint, attempts, lease_until, received_txid)"
                + " VALUES (?, ?, 'PROCESSING', ?, 1, " + leaseEnd + ", ?)"
                + " ON DUPLICATE KEY UPDATE"
                + " received_txid = IF(" + retryable + " AND " + sameFingerprint + ", ?, received_txid),"
                + " failures = IF(" + mine + " AND status = 'PROCESSING', failures + 1, failures),"
                + " status = IF(" + mine + ", IF(status = 'PROCESSING' AND failures >= " + maxAttempts
                + ", 'DEAD', 'PROCESSING'), status),"
                + " attempts = IF(" + mine + " AND status <> 'DEAD', attempts + 1, attempts),"
                + " last_error = IF(" + mine + " AND status = 'DEAD', CONCAT('lease expired on attempt ', attempts,"
                + " ', failure ', failures, ' of " + maxAttempts + "; last error: ', COALESCE(last_error, 'none')), last_error),"
                + " lease_until = IF(" + mine + ", IF(status = 'DEAD', NULL, " + leaseEnd + "), lease_until)";
        classifyClaim = "SELECT " + mine + ", status, attempts, failures, " + epochMicros("lease_until") + ", last_error"
                + " FROM " + t + " WHERE consumer = ? AND message_key = ? FOR UPDATE";
        complete = "UPDATE " + t + " SET status = 'COMPLETED', completed_at = " + now + ", lease_until = NULL, result = ?"
                + " WHERE consumer = ? AND message_key = ? AND status = 'PROCESSING' AND attempts = ?"
                + " AND " + epochMicros("lease_until") + " = ?";
    }

    /** {@code column} as whole microseconds since the epoch, free of any time zone; null stays null. */
    private static String epochMicros(String column) {
        return "CAST(UNIX_TIMESTAMP(" + column + ") * 1000000 AS SIGNED)";
    }
}
