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

    MariaDbInboxSql(TxboxTables tables, Dialect dialect) {
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
    }
}
