package io.txbox.internal;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;

import io.txbox.internal.schema.tables.TxboxOutboxDead;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Table;
import java.util.List;

/**
 * The one list of the columns that carry an outbox message: what {@code Outbox.send} writes, what
 * the relay claims and publishes, and what moves between the outbox and its dead-letter table
 * ({@link TxboxOutboxDead} has the same columns under the same names).
 */
public final class OutboxColumns {
    /** The message as the sender wrote it, in the order the outbox insert binds it. */
    public static final List<Field<?>> MESSAGE = List.of(TXBOX_OUTBOX.STEP_KEY, TXBOX_OUTBOX.ORIGINAL_KEY,
            TXBOX_OUTBOX.DESTINATION, TXBOX_OUTBOX.ROUTING_KEY, TXBOX_OUTBOX.LANE, TXBOX_OUTBOX.PAYLOAD,
            TXBOX_OUTBOX.HEADER_NAMES, TXBOX_OUTBOX.HEADER_VALUES, TXBOX_OUTBOX.CONTENT_TYPE,
            TXBOX_OUTBOX.TRACEPARENT, TXBOX_OUTBOX.TRACESTATE);

    /** A row as it moves to and from the dead letters: the id, the message and its creation time. */
    public static final List<Field<?>> ROW = concat(List.of(TXBOX_OUTBOX.ID), MESSAGE, List.of(TXBOX_OUTBOX.CREATED_AT));

    private OutboxColumns() {}

    /** {@code columns} as the same-named columns of {@code table} (the dead-letter table, a CTE, an alias). */
    public static List<Field<?>> of(Table<?> table, List<Field<?>> columns) {
        return columns.stream().<Field<?>>map(f -> {
            Field<?> mapped = table.field(f.getName());
            if (mapped == null) {
                throw new IllegalStateException(table.getName() + " has no column " + f.getName());
            }
            return mapped;
        }).toList();
    }

    /** The lists one after the other. */
    @SafeVarargs
    public static List<Field<?>> concat(List<? extends Field<?>>... lists) {
        return java.util.Arrays.stream(lists).<Field<?>>flatMap(List::stream).toList();
    }
}
