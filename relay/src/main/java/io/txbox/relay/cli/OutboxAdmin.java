package io.txbox.relay.cli;

import static io.txbox.internal.schema.tables.TxboxInbox.TXBOX_INBOX;
import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/**
 * The SQL behind the admin commands, rendered by jOOQ from the generated tables under the
 * configured schema and prefix. Every cutoff uses the database clock ({@code now()}), so a
 * skewed admin host cannot purge too much. Deletes and retries run in bounded batches, one
 * short transaction each, so a purge of millions of rows never holds locks for long.
 *
 * <p>The dead-letter commands keep their own SQL rather than calling {@link
 * io.txbox.relay.DeadLetters}, which has none of what they offer: a destination filter,
 * payloads, a dry run, batched deletes, and a retry that drops a row whose step key is pending
 * in the outbox again (DeadLetters leaves such a row dead).
 */
final class OutboxAdmin {
    /** Rows per delete or retry transaction. */
    static final int BATCH = 1000;

    private final DataSource dataSource;
    private final Settings settings;

    OutboxAdmin(DataSource dataSource, TxboxTables tables) {
        this.dataSource = dataSource;
        this.settings = Jooq.settings(tables);
    }

    /** What {@code status} shows. Ages are null when the table holds no such row. */
    record Status(long outboxRows, long outboxReady, @Nullable Duration oldestPendingAge, long outboxDead,
            @Nullable Instant oldestDeadAt, long inboxDead, long relayMembers, long ownedLanes) {}

    /** One dead outbox row as {@code dead list} shows it. */
    record DeadRow(long id, String stepKey, String destination, int attempts, String reason, Instant deadAt,
            @Nullable String payload) {}

    /** Outcome of a retry: rows moved back into the outbox, and rows whose step key was already pending there. */
    record RetryResult(int requeued, int alreadyPending) {}

    private record Batch(int requeued, int alreadyPending, long lastId, int size) {}

    Status status() {
        return inTx(db -> {
            Field<OffsetDateTime> now = DSL.currentOffsetDateTime();
            Record outbox = db.select(DSL.count(),
                            DSL.count().filterWhere(TXBOX_OUTBOX.AVAILABLE_AT.le(now)),
                            DSL.min(TXBOX_OUTBOX.CREATED_AT), now)
                    .from(TXBOX_OUTBOX).fetchSingle();
            Record dead = db.select(DSL.count(), DSL.min(TXBOX_OUTBOX_DEAD.DEAD_AT)).from(TXBOX_OUTBOX_DEAD).fetchSingle();
            int inboxDead = db.fetchCount(TXBOX_INBOX, TXBOX_INBOX.STATUS.eq("DEAD"));
            int members = db.fetchCount(TXBOX_RELAY_MEMBER, TXBOX_RELAY_MEMBER.LEASE_UNTIL.gt(now));
            int lanes = db.fetchCount(TXBOX_RELAY_LANE, TXBOX_RELAY_LANE.OWNER.isNotNull()
                    .and(TXBOX_RELAY_LANE.LEASE_UNTIL.gt(now)));
            OffsetDateTime oldest = outbox.get(2, OffsetDateTime.class);
            OffsetDateTime dbNow = outbox.get(3, OffsetDateTime.class);
            Duration age = oldest == null ? null : Duration.between(oldest, dbNow);
            OffsetDateTime oldestDead = dead.get(1, OffsetDateTime.class);
            return new Status(outbox.get(0, Long.class), outbox.get(1, Long.class), age, dead.get(0, Long.class),
                    oldestDead == null ? null : oldestDead.toInstant(), inboxDead, members, lanes);
        });
    }

    /** Dead rows, newest first; payloads (decoded as UTF-8, lossy) only when asked. */
    List<DeadRow> listDead(int limit, @Nullable String destination, boolean withPayload) {
        return inTx(db -> {
            Condition where = destination == null ? DSL.noCondition() : TXBOX_OUTBOX_DEAD.DESTINATION.eq(destination);
            Field<byte[]> payload = withPayload ? TXBOX_OUTBOX_DEAD.PAYLOAD : DSL.castNull(TXBOX_OUTBOX_DEAD.PAYLOAD).as("payload");
            List<DeadRow> rows = new ArrayList<>();
            for (Record r : db.select(TXBOX_OUTBOX_DEAD.ID, TXBOX_OUTBOX_DEAD.STEP_KEY, TXBOX_OUTBOX_DEAD.DESTINATION,
                            TXBOX_OUTBOX_DEAD.ATTEMPTS, TXBOX_OUTBOX_DEAD.REASON, TXBOX_OUTBOX_DEAD.DEAD_AT, payload)
                    .from(TXBOX_OUTBOX_DEAD).where(where)
                    .orderBy(TXBOX_OUTBOX_DEAD.DEAD_AT.desc(), TXBOX_OUTBOX_DEAD.ID.desc())
                    .limit(limit).fetch()) {
                byte[] bytes = r.get(6, byte[].class);
                rows.add(new DeadRow(r.get(TXBOX_OUTBOX_DEAD.ID), r.get(TXBOX_OUTBOX_DEAD.STEP_KEY),
                        r.get(TXBOX_OUTBOX_DEAD.DESTINATION), r.get(TXBOX_OUTBOX_DEAD.ATTEMPTS),
                        r.get(TXBOX_OUTBOX_DEAD.REASON), r.get(TXBOX_OUTBOX_DEAD.DEAD_AT).toInstant(),
                        bytes == null ? null : new String(bytes, StandardCharsets.UTF_8)));
            }
            return rows;
        });
    }

    /**
     * Moves dead rows back into the outbox with zero attempts, available now, under a new id
     * (the relay claims in id order, and an old id could sit behind rows it already passed).
     * The original {@code created_at} is kept, so the backlog age tells the truth. A row whose
     * step key is already in the outbox again is dropped from the dead table, not duplicated.
     *
     * @param id one row, or null for every row (of {@code destination}, if given)
     */
    RetryResult retry(@Nullable Long id, @Nullable String destination) {
        int requeued = 0;
        int pending = 0;
        long after = 0;
        while (true) {
            long from = after;
            Batch b = inTx(db -> retryBatch(db, id != null ? TXBOX_OUTBOX_DEAD.ID.eq(id)
                    : TXBOX_OUTBOX_DEAD.ID.gt(from).and(destination == null ? DSL.noCondition()
                            : TXBOX_OUTBOX_DEAD.DESTINATION.eq(destination))));
            requeued += b.requeued();
            pending += b.alreadyPending();
            if (id != null || b.size() < BATCH) {
                return new RetryResult(requeued, pending);
            }
            after = b.lastId();
        }
    }

    private static Batch retryBatch(DSLContext db, Condition where) {
        List<Long> ids = db.select(TXBOX_OUTBOX_DEAD.ID).from(TXBOX_OUTBOX_DEAD).where(where)
                .orderBy(TXBOX_OUTBOX_DEAD.ID).limit(BATCH).forUpdate().skipLocked()
                .fetch(TXBOX_OUTBOX_DEAD.ID);
        if (ids.isEmpty()) {
            return new Batch(0, 0, 0, 0);
        }
        int inserted = db.insertInto(TXBOX_OUTBOX, TXBOX_OUTBOX.STEP_KEY, TXBOX_OUTBOX.ORIGINAL_KEY,
                        TXBOX_OUTBOX.DESTINATION, TXBOX_OUTBOX.ROUTING_KEY, TXBOX_OUTBOX.LANE, TXBOX_OUTBOX.PAYLOAD,
                        TXBOX_OUTBOX.HEADER_NAMES, TXBOX_OUTBOX.HEADER_VALUES, TXBOX_OUTBOX.CONTENT_TYPE,
                        TXBOX_OUTBOX.TRACEPARENT, TXBOX_OUTBOX.TRACESTATE, TXBOX_OUTBOX.CREATED_AT)
                .select(db.select(TXBOX_OUTBOX_DEAD.STEP_KEY, TXBOX_OUTBOX_DEAD.ORIGINAL_KEY,
                                TXBOX_OUTBOX_DEAD.DESTINATION, TXBOX_OUTBOX_DEAD.ROUTING_KEY, TXBOX_OUTBOX_DEAD.LANE,
                                TXBOX_OUTBOX_DEAD.PAYLOAD, TXBOX_OUTBOX_DEAD.HEADER_NAMES,
                                TXBOX_OUTBOX_DEAD.HEADER_VALUES, TXBOX_OUTBOX_DEAD.CONTENT_TYPE,
                                TXBOX_OUTBOX_DEAD.TRACEPARENT, TXBOX_OUTBOX_DEAD.TRACESTATE,
                                TXBOX_OUTBOX_DEAD.CREATED_AT)
                        .from(TXBOX_OUTBOX_DEAD).where(TXBOX_OUTBOX_DEAD.ID.in(ids))
                        // identity values follow this order, so retried rows keep their relative order
                        .orderBy(TXBOX_OUTBOX_DEAD.ID))
                .onConflict(TXBOX_OUTBOX.STEP_KEY).doNothing()
                .execute();
        db.deleteFrom(TXBOX_OUTBOX_DEAD).where(TXBOX_OUTBOX_DEAD.ID.in(ids)).execute();
        return new Batch(inserted, ids.size() - inserted, ids.get(ids.size() - 1), ids.size());
    }

    /** Deletes dead rows whose {@code dead_at} is older than {@code olderThan}, or only counts them. */
    long purgeDead(Duration olderThan, boolean dryRun) {
        Condition old = TXBOX_OUTBOX_DEAD.DEAD_AT.lt(cutoff(olderThan));
        if (dryRun) {
            return inTx(db -> (long) db.fetchCount(TXBOX_OUTBOX_DEAD, old));
        }
        long total = 0;
        while (true) {
            int n = inTx(db -> db.deleteFrom(TXBOX_OUTBOX_DEAD).where(TXBOX_OUTBOX_DEAD.ID.in(
                    db.select(TXBOX_OUTBOX_DEAD.ID).from(TXBOX_OUTBOX_DEAD).where(old).limit(BATCH)
                            .forUpdate().skipLocked())).execute());
            total += n;
            if (n < BATCH) {
                return total;
            }
        }
    }

    /**
     * Deletes COMPLETED inbox entries completed more than {@code olderThan} ago (past the dedup
     * window a redelivery is no longer expected), or only counts them. Dead, failed and
     * in-flight entries are never touched.
     */
    long purgeInbox(Duration olderThan, @Nullable String consumer, boolean dryRun) {
        Condition old = TXBOX_INBOX.STATUS.eq("COMPLETED").and(TXBOX_INBOX.COMPLETED_AT.lt(cutoff(olderThan)))
                .and(consumer == null ? DSL.noCondition() : TXBOX_INBOX.CONSUMER.eq(consumer));
        if (dryRun) {
            return inTx(db -> (long) db.fetchCount(TXBOX_INBOX, old));
        }
        long total = 0;
        while (true) {
            int n = inTx(db -> db.deleteFrom(TXBOX_INBOX)
                    .where(DSL.row(TXBOX_INBOX.CONSUMER, TXBOX_INBOX.MESSAGE_KEY).in(
                            db.select(TXBOX_INBOX.CONSUMER, TXBOX_INBOX.MESSAGE_KEY).from(TXBOX_INBOX).where(old)
                                    .limit(BATCH).forUpdate().skipLocked()))
                    .execute());
            total += n;
            if (n < BATCH) {
                return total;
            }
        }
    }

    /** {@code now() - olderThan}, evaluated by the database. */
    private static Field<OffsetDateTime> cutoff(Duration olderThan) {
        return DSL.field("(now() - ({0} * interval '1 millisecond'))", OffsetDateTime.class, DSL.val(olderThan.toMillis()));
    }

    @FunctionalInterface
    private interface Work<T> {
        T run(DSLContext db);
    }

    private <T> T inTx(Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                T result = work.run(Jooq.on(c, settings));
                c.commit();
                return result;
            } catch (RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new TxboxException("database error: " + e.getMessage(), e, e.getSQLState());
        } catch (DataAccessException e) {
            throw new TxboxException("database error: " + e.getMessage(), e, e.sqlState());
        }
    }
}
