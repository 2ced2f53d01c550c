package io.txbox.outbox;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.Jooq;
import io.txbox.internal.SqlErrors;
import io.txbox.internal.Transactions;
import io.txbox.internal.schema.tables.TxboxOutbox;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.conf.ParamType;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

final class OutboxImpl implements Outbox {
    private static final Logger log = LoggerFactory.getLogger(Outbox.class);

    private final TxboxTables tables;
    private final int maxRecordBytes;
    // rendered once from the generated table; each send only binds and executes
    private final String insertSql;
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();

    OutboxImpl(Outbox.Builder b) {
        this.tables = b.tables;
        this.maxRecordBytes = b.maxRecordBytes;
        this.insertSql = renderInsert(tables);
    }

    static String renderInsert(TxboxTables tables) {
        TxboxOutbox o = TXBOX_OUTBOX;
        DSLContext r = Jooq.renderer(tables);
        // A delay counts from the send: clock_timestamp() is this statement's time, while
        // current_timestamp is the transaction's start, which may be long before. Without a
        // delay the row is due at the transaction's start, as before, so a relay whose claim
        // began just before this commit still sees it due.
        var availableAt = DSL.field("coalesce({0}, case when {1} = 0 then current_timestamp else clock_timestamp() end)"
                        + " + ({2} * interval '1 microsecond')",
                SQLDataType.TIMESTAMPWITHTIMEZONE,
                DSL.val(null, SQLDataType.TIMESTAMPWITHTIMEZONE), DSL.val(0L), DSL.val(0L));
        return r.insertInto(o, o.STEP_KEY, o.ORIGINAL_KEY, o.DESTINATION, o.ROUTING_KEY, o.LANE, o.PAYLOAD,
                        o.HEADER_NAMES, o.HEADER_VALUES, o.CONTENT_TYPE, o.TRACEPARENT, o.TRACESTATE, o.AVAILABLE_AT)
                .values(DSL.val((String) null), DSL.val((String) null), DSL.val((String) null), DSL.val((String) null),
                        DSL.val((Short) null), DSL.val((byte[]) null), DSL.val((String[]) null), DSL.val((String[]) null),
                        DSL.val((String) null), DSL.val((String) null), DSL.val((String) null), availableAt)
                .onConflict(o.STEP_KEY).doNothing()
                .getSQL(ParamType.INDEXED);
    }

    @Override
    public boolean send(Connection tx, OutboxMessage message) {
        Args.notNull(tx, "tx");
        Args.notNull(message, "message");
        checkSize(message);
        Transactions.requireTransaction(tx, "outbox send of " + message.stepKey());
        try (PreparedStatement ps = tx.prepareStatement(insertSql)) {
            bind(tx, ps, message);
            boolean emitted = ps.executeUpdate() == 1;
            if (!emitted && log.isDebugEnabled()) {
                log.debug("{} - step already in outbox, not sent again", message.stepKey());
            }
            fire();
            return emitted;
        } catch (SQLException e) {
            throw SqlErrors.translate("outbox send of " + message.stepKey(), e);
        }
    }

    @Override
    public List<Boolean> sendAll(Connection tx, List<OutboxMessage> messages) {
        Args.notNull(tx, "tx");
        Args.notNull(messages, "messages");
        for (int i = 0; i < messages.size(); i++) {
            checkSize(Args.notNull(messages.get(i), "messages[" + i + "]"));
        }
        Transactions.requireTransaction(tx, "outbox sendAll");
        if (messages.isEmpty()) {
            return List.of();
        }
        try (PreparedStatement ps = tx.prepareStatement(insertSql)) {
            for (OutboxMessage m : messages) {
                bind(tx, ps, m);
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            List<Boolean> emitted = new ArrayList<>(counts.length);
            for (int c : counts) {
                emitted.add(c == 1);
            }
            fire();
            return emitted;
        } catch (SQLException e) {
            throw SqlErrors.translate("outbox sendAll of " + messages.size() + " messages", e);
        }
    }

    @Override
    public TxboxTables tables() {
        return tables;
    }

    @Override
    public AutoCloseable onSend(Runnable listener) {
        listeners.add(Args.notNull(listener, "listener"));
        return () -> listeners.remove(listener);
    }

    private void fire() {
        for (Runnable l : listeners) {
            try {
                l.run();
            } catch (RuntimeException e) {
                log.warn("outbox send listener failed", e);
            }
        }
    }

    private void checkSize(OutboxMessage m) {
        if (m.recordBytes() > maxRecordBytes) {
            throw new InvalidInputException("message " + m.stepKey() + " is " + m.recordBytes()
                    + " bytes as Kafka counts its record (payload of " + m.payload().length
                    + " bytes, plus routing key, headers and record overhead), over the outbox cap of "
                    + maxRecordBytes + " bytes (maxRecordBytes)");
        }
    }

    private static void bind(Connection tx, PreparedStatement ps, OutboxMessage m) throws SQLException {
        StepKey key = m.stepKey();
        ps.setString(1, key.value());
        ps.setString(2, key.original());
        ps.setString(3, m.destination());
        ps.setString(4, m.routingKey());
        ps.setShort(5, Lanes.of(m.routingKey(), key.value()));
        ps.setBytes(6, m.payload());
        Map<String, String> headers = m.headers();
        if (headers.isEmpty()) {
            ps.setNull(7, Types.ARRAY);
            ps.setNull(8, Types.ARRAY);
        } else {
            ps.setArray(7, textArray(tx, headers.keySet().toArray(String[]::new)));
            ps.setArray(8, textArray(tx, headers.values().toArray(String[]::new)));
        }
        ps.setString(9, m.contentType());
        ps.setString(10, m.traceparent());
        ps.setString(11, m.tracestate());
        if (m.availableAt() == null) {
            ps.setNull(12, Types.TIMESTAMP_WITH_TIMEZONE);
        } else {
            ps.setObject(12, OffsetDateTime.ofInstant(m.availableAt(), ZoneOffset.UTC));
        }
        long delayMicros = m.delay().toNanos() / 1000;
        ps.setLong(13, delayMicros);
        ps.setLong(14, delayMicros);
    }

    private static Array textArray(Connection tx, String[] values) throws SQLException {
        return tx.createArrayOf("text", values);
    }
}
