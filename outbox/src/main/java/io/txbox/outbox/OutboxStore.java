package io.txbox.outbox;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * The outbox's statements, behind one seam per database: the insert of a message that is a no-op
 * when its step key is already in the outbox. Implementations render the statement once, when the
 * outbox is built (so the configured schema and prefix apply), and only bind it per call.
 * {@link PostgresOutboxStore} is the PostgreSQL implementation, {@link MariaDbOutboxStore} the one
 * for MariaDB and MySQL.
 */
interface OutboxStore {
    /** The store for {@code tables} on {@code dialect}'s database. */
    static OutboxStore of(TxboxTables tables, Dialect dialect) {
        return dialect.isMysqlFamily() ? new MariaDbOutboxStore(tables, dialect) : new PostgresOutboxStore(tables);
    }

    /** Inserts {@code message} on {@code tx}, unless its step key is in the outbox; returns whether it wrote the row. */
    boolean insert(Connection tx, OutboxMessage message) throws SQLException;

    /**
     * Change-data-capture mode: inserts each message marked {@code captured}, unless its step key
     * is in the outbox, then deletes them in one statement, so that only the log sees them; returns
     * whether each wrote its row, in order. Never touches another transaction's row: it deletes
     * only captured rows of its step keys, and a captured row of another transaction is gone when
     * that transaction commits.
     */
    boolean[] insertAllCaptured(Connection tx, List<OutboxMessage> messages) throws SQLException;

    /** {@link #insert} for each message, in one batched round trip; returns whether each wrote its row, in order. */
    boolean[] insertAll(Connection tx, List<OutboxMessage> messages) throws SQLException;

    /**
     * Wakes the relays listening for this outbox's sends when {@code tx} commits, where the
     * database can ({@link io.txbox.internal.WakeChannel}); a no-op elsewhere.
     */
    default void wakeRelays(Connection tx) throws SQLException {}

    /** Binds what both databases' inserts start with: step key, original key, destination, routing key, lane, payload. */
    static void bindHead(PreparedStatement ps, OutboxMessage m) throws SQLException {
        StepKey key = m.stepKey();
        ps.setString(1, key.value());
        ps.setString(2, key.original());
        ps.setString(3, m.destination());
        ps.setString(4, m.routingKey());
        ps.setShort(5, Lanes.of(m.routingKey(), key.value()));
        ps.setBytes(6, m.payload());
    }
}
