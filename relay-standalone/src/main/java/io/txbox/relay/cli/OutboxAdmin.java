package io.txbox.relay.cli;

import static io.txbox.internal.schema.tables.TxboxInbox.TXBOX_INBOX;
import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import javax.sql.DataSource;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Record;
import io.txbox.internal.shaded.jooq.conf.Settings;
import io.txbox.internal.shaded.jooq.exception.DataAccessException;
import io.txbox.internal.shaded.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/**
 * The SQL behind the admin commands, rendered by jOOQ from the generated tables under the
 * configured schema and prefix. Every cutoff uses the database clock ({@code now()}), so a
 * skewed admin host cannot purge too much. Deletes and retries run in bounded batches, one
 * short transaction each, so a purge of millions of rows never holds locks for long.
 *
 * <p>The dead-letter commands use {@link io.txbox.relay.DeadLetters}; this class holds what only
 * the CLI needs: status counts and the inbox purge.
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
