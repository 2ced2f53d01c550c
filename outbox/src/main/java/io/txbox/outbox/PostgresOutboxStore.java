package io.txbox.outbox;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.OutboxColumns;
import io.txbox.internal.PostgresSql;
import io.txbox.internal.WakeChannel;
import io.txbox.internal.schema.tables.TxboxOutbox;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.conf.ParamType;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The outbox insert on PostgreSQL: {@code INSERT ... ON CONFLICT (step_key) DO NOTHING}, rendered
 * once; in change-data-capture mode the same insert marked {@code captured}, batched, then one
 * delete of the step keys it wrote (one statement cannot do both: a data-modifying CTE's delete does
 * not see the rows its insert made).
 */
final class PostgresOutboxStore implements OutboxStore {
    private final String insertSql;
    private final String insertCapturedSql;
    private final String deleteSql;
    private final String channel;

    PostgresOutboxStore(TxboxTables tables) {
        this.channel = WakeChannel.of(tables);
        this.insertSql = renderInsert(tables);
        TxboxOutbox o = TXBOX_OUTBOX;
        List<Field<?>> values = new ArrayList<>();
        for (Field<?> f : OutboxColumns.MESSAGE) {
            values.add(DSL.val(null, f.getDataType()));
        }
        values.add(DSL.inline(true));
        this.insertCapturedSql = Jooq.renderer(tables).insertInto(o)
                .columns(OutboxColumns.concat(OutboxColumns.MESSAGE, List.of(o.CAPTURED))).values(values)
                .onConflict(o.STEP_KEY).doNothing()
                .getSQL(ParamType.INDEXED);
        this.deleteSql = Jooq.renderer(tables).deleteFrom(o)
                .where(o.STEP_KEY.eq(DSL.any(PostgresSql.param(SQLDataType.VARCHAR.array())))).and(o.CAPTURED)
                .getSQL(ParamType.INDEXED);
    }

    /** The insert, one bind parameter per {@link OutboxColumns#MESSAGE} column, then the due time's three. */
    static String renderInsert(TxboxTables tables) {
        TxboxOutbox o = TXBOX_OUTBOX;
        // A template, being PostgreSQL's own: a delay counts from the send: clock_timestamp() is this
        // statement's time, while current_timestamp is the transaction's start, which may be long
        // before. Without a delay the row is due at the transaction's start, as before, so a relay
        // whose claim began just before this commit still sees it due.
        Field<OffsetDateTime> availableAt = DSL.field(
                "coalesce({0}, case when {1} = 0 then current_timestamp else clock_timestamp() end)"
                        + " + ({2} * interval '1 microsecond')",
                SQLDataType.TIMESTAMPWITHTIMEZONE,
                DSL.val(null, SQLDataType.TIMESTAMPWITHTIMEZONE), DSL.val(0L), DSL.val(0L));
        List<Field<?>> columns = OutboxColumns.concat(OutboxColumns.MESSAGE, List.of(o.AVAILABLE_AT));
        List<Field<?>> values = new ArrayList<>();
        for (Field<?> f : OutboxColumns.MESSAGE) {
            values.add(DSL.val(null, f.getDataType()));
        }
        values.add(availableAt);
        return Jooq.renderer(tables).insertInto(o).columns(columns).values(values)
                .onConflict(o.STEP_KEY).doNothing()
                .getSQL(ParamType.INDEXED);
    }

    @Override
    public boolean insert(Connection tx, OutboxMessage message) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(insertSql)) {
            bind(tx, ps, message);
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public boolean[] insertAllCaptured(Connection tx, List<OutboxMessage> messages) throws SQLException {
        boolean[] emitted;
        try (PreparedStatement ps = tx.prepareStatement(insertCapturedSql)) {
            for (OutboxMessage m : messages) {
                bindMessage(tx, ps, m);
                ps.addBatch();
            }
            emitted = written(ps.executeBatch());
        }
        // every step key of the batch, not only those counted as written: a driver that rewrites
        // batches (reWriteBatchedInserts) reports no counts, and a captured row left behind would be
        // published by a relay too. The only captured rows of these keys are this transaction's own.
        String[] keys = new String[messages.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = messages.get(i).stepKey().value();
        }
        try (PreparedStatement ps = tx.prepareStatement(deleteSql)) {
            ps.setArray(1, tx.createArrayOf("text", keys));
            ps.executeUpdate();
        }
        return emitted;
    }

    @Override
    public boolean[] insertAll(Connection tx, List<OutboxMessage> messages) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(insertSql)) {
            for (OutboxMessage m : messages) {
                bind(tx, ps, m);
                ps.addBatch();
            }
            return written(ps.executeBatch());
        }
    }

    /** Which statements of a batch of inserts wrote their row. */
    private static boolean[] written(int[] counts) {
        boolean[] emitted = new boolean[counts.length];
        for (int i = 0; i < counts.length; i++) {
            emitted[i] = counts[i] == 1;
        }
        return emitted;
    }

    @Override
    public void wakeRelays(Connection tx) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(WakeChannel.NOTIFY_SQL)) {
            ps.setString(1, channel);
            ps.execute();
        }
    }

    /** Binds in {@link OutboxColumns#MESSAGE} order, then the due time's three. */
    private static void bind(Connection tx, PreparedStatement ps, OutboxMessage m) throws SQLException {
        bindMessage(tx, ps, m);
        if (m.availableAt() == null) {
            ps.setNull(12, Types.TIMESTAMP_WITH_TIMEZONE);
        } else {
            ps.setObject(12, OffsetDateTime.ofInstant(m.availableAt(), ZoneOffset.UTC));
        }
        long delayMicros = m.delay().toNanos() / 1000;
        ps.setLong(13, delayMicros);
        ps.setLong(14, delayMicros);
    }

    /** Binds the {@link OutboxColumns#MESSAGE} columns, parameters 1 to 11. */
    private static void bindMessage(Connection tx, PreparedStatement ps, OutboxMessage m) throws SQLException {
        OutboxStore.bindHead(ps, m);
        Map<String, String> headers = m.headers();
        if (headers.isEmpty()) {
            ps.setNull(7, Types.ARRAY);
            ps.setNull(8, Types.ARRAY);
        } else {
            ps.setArray(7, tx.createArrayOf("text", headers.keySet().toArray(String[]::new)));
            ps.setArray(8, tx.createArrayOf("text", headers.values().toArray(String[]::new)));
        }
        ps.setString(9, m.contentType());
        ps.setString(10, m.traceparent());
        ps.setString(11, m.tracestate());
    }
}
