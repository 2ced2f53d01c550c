package io.txbox.outbox;

import static io.txbox.internal.mariadb.schema.tables.TxboxOutbox.TXBOX_OUTBOX;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;
import io.txbox.internal.JsonStrings;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The outbox insert on MariaDB 10.6+ and MySQL 8.0+, the counterpart of {@link
 * PostgresOutboxStore}'s {@code INSERT ... ON CONFLICT (step_key) DO NOTHING}.
 *
 * <p>It is a plain {@code INSERT}. A step key that is already there fails the statement with
 * error 1062 ({@link #isDuplicateStepKey}), which on MariaDB and MySQL rolls back that statement
 * only: the caller's transaction goes on, and the send reports "not emitted". A concurrent send of
 * the same step key waits on the unique index until the first transaction ends, then fails with
 * 1062 (first committed) or inserts (first rolled back). Neither {@code INSERT IGNORE} (which
 * would also turn a too-long value into a silent truncation) nor {@code ON DUPLICATE KEY UPDATE}
 * (whose affected-rows count depends on the driver's found-rows flag, so "inserted" and "already
 * there" can look the same) says it as reliably. For the same reason {@link #insertAll} runs one
 * statement per message: a batch stops or goes on after a failed row as the driver pleases.
 *
 * <p>Headers travel as JSON arrays of strings ({@code header_names}, {@code header_values}).
 * {@code available_at} is {@code COALESCE(at, CURRENT_TIMESTAMP(6)) + delay}, the time bound as
 * epoch seconds so the session's time zone cannot shift it: MariaDB has no transaction-start
 * clock, so the statement's time stands in for PostgreSQL's. A string around the generated table
 * name: the statement has no construct jOOQ would render differently for MariaDB and MySQL.
 */
final class MariaDbOutboxStore implements OutboxStore {
    /** MariaDB / MySQL ER_DUP_ENTRY. */
    static final int DUPLICATE_ENTRY = 1062;

    private final String insert;
    private final String insertCaptured;
    private final String delete;
    private final String stepKeyIndex;

    MariaDbOutboxStore(TxboxTables tables, Dialect dialect) {
        String t = Jooq.renderer(tables, dialect).render(TXBOX_OUTBOX);
        stepKeyIndex = tables.prefix() + "outbox_step_key_uq";
        insert = "INSERT INTO " + t + " (step_key, original_key, destination, routing_key, lane, payload, header_names,"
                + " header_values, content_type, traceparent, tracestate, available_at)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                + " COALESCE(FROM_UNIXTIME(?), CURRENT_TIMESTAMP(6)) + INTERVAL ? MICROSECOND)";
        // captured rows are never delayed (Outbox refuses that), so the due time's two stay unset
        insertCaptured = "INSERT INTO " + t + " (step_key, original_key, destination, routing_key, lane, payload,"
                + " header_names, header_values, content_type, traceparent, tracestate, captured)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, TRUE)";
        delete = "DELETE FROM " + t + " WHERE id = ?";
    }

    @Override
    public boolean[] insertAllCaptured(Connection tx, List<OutboxMessage> messages) throws SQLException {
        boolean[] emitted = new boolean[messages.size()];
        List<Long> ids = new ArrayList<>(messages.size());
        try (PreparedStatement ps = tx.prepareStatement(insertCaptured, Statement.RETURN_GENERATED_KEYS)) {
            for (int i = 0; i < emitted.length; i++) {
                OutboxMessage m = messages.get(i);
                bindMessage(ps, m);
                try {
                    ps.executeUpdate();
                } catch (SQLException e) {
                    if (isDuplicateStepKey(e)) {
                        continue;
                    }
                    throw e;
                }
                try (ResultSet keys = ps.getGeneratedKeys()) {
                    if (!keys.next()) {
                        throw new SQLException("the captured outbox insert of " + m.stepKey() + " returned no id");
                    }
                    ids.add(keys.getLong(1));
                }
                emitted[i] = true;
            }
        }
        if (!ids.isEmpty()) {
            // one batch: the driver sends it in one round trip
            try (PreparedStatement ps = tx.prepareStatement(delete)) {
                for (long id : ids) {
                    ps.setLong(1, id);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
        }
        return emitted;
    }

    @Override
    public boolean insert(Connection tx, OutboxMessage message) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(insert)) {
            return insert(ps, message);
        }
    }

    @Override
    public boolean[] insertAll(Connection tx, List<OutboxMessage> messages) throws SQLException {
        boolean[] emitted = new boolean[messages.size()];
        try (PreparedStatement ps = tx.prepareStatement(insert)) {
            for (int i = 0; i < emitted.length; i++) {
                emitted[i] = insert(ps, messages.get(i));
            }
        }
        return emitted;
    }

    private boolean insert(PreparedStatement ps, OutboxMessage m) throws SQLException {
        bind(ps, m);
        try {
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            if (isDuplicateStepKey(e)) {
                return false;
            }
            throw e;
        }
    }

    /** Whether {@code e} is the insert's own duplicate step key, and nothing else. */
    boolean isDuplicateStepKey(SQLException e) {
        String message = e.getMessage();
        return e.getErrorCode() == DUPLICATE_ENTRY && message != null && message.contains(stepKeyIndex);
    }

    private static void bind(PreparedStatement ps, OutboxMessage m) throws SQLException {
        bindMessage(ps, m);
        if (m.availableAt() == null) {
            ps.setNull(12, Types.DECIMAL);
        } else {
            ps.setBigDecimal(12, BigDecimal.valueOf(m.availableAt().getEpochSecond())
                    .add(BigDecimal.valueOf(m.availableAt().getNano() / 1000, 6)));
        }
        ps.setLong(13, m.delay().toNanos() / 1000);
    }

    /** Binds the message's eleven columns, without the due time. */
    private static void bindMessage(PreparedStatement ps, OutboxMessage m) throws SQLException {
        OutboxStore.bindHead(ps, m);
        Map<String, String> headers = m.headers();
        if (headers.isEmpty()) {
            ps.setNull(7, Types.VARCHAR);
            ps.setNull(8, Types.VARCHAR);
        } else {
            ps.setString(7, JsonStrings.encode(headers.keySet()));
            ps.setString(8, JsonStrings.encode(headers.values()));
        }
        ps.setString(9, m.contentType());
        ps.setString(10, m.traceparent());
        ps.setString(11, m.tracestate());
    }
}
