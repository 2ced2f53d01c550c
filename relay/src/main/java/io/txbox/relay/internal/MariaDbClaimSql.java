package io.txbox.relay.internal;

import static io.txbox.internal.mariadb.schema.tables.TxboxOutbox.TXBOX_OUTBOX;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;

/**
 * The relay's claim on MariaDB 10.6+ and MySQL 8.0+, the counterpart of {@link OutboxClaims}'s
 * claim query: due rows of the worker's lanes, in id order, {@code FOR UPDATE SKIP LOCKED}.
 *
 * <p>The lanes travel as one JSON array parameter ({@code [3,7,12]}), read with {@code
 * JSON_TABLE}, the counterpart of PostgreSQL's {@code = ANY(?)}.
 *
 * <p><b>Run it at READ COMMITTED.</b> At InnoDB's default REPEATABLE READ a locking read also
 * locks the gaps it scanned, up to the end of the primary key, so every {@code send} that
 * inserts a new outbox row would wait until the claiming transaction ends. At READ COMMITTED a
 * locking read locks only the rows it returns, and sends go on. The relay owns its connections,
 * so {@link #READ_COMMITTED} is set on them before each claim transaction.
 */
public final class MariaDbClaimSql {
    /** Run on the relay's connection before its claim transaction begins. */
    public static final String READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

    /** Bind order: lanes (JSON array of numbers), batch size. */
    public final String claim;

    public MariaDbClaimSql(TxboxTables tables, Dialect dialect) {
        String t = Jooq.renderer(tables, dialect).render(TXBOX_OUTBOX);
        claim = "SELECT id, step_key, original_key, destination, routing_key, lane, payload, header_names, header_values,"
                + " content_type, traceparent, tracestate, attempts, created_at FROM " + t
                + " WHERE lane IN (SELECT mine.lane FROM JSON_TABLE(?, '$[*]' COLUMNS (lane smallint PATH '$')) AS mine)"
                + " AND available_at <= CURRENT_TIMESTAMP(6)"
                + " ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED";
    }
}
