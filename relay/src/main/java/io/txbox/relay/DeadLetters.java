package io.txbox.relay;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.Jooq;
import io.txbox.internal.OutboxColumns;
import io.txbox.internal.PostgresSql;
import io.txbox.internal.SqlErrors;
import io.txbox.internal.schema.tables.TxboxOutboxDead;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.conf.ParamType;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Operations on the outbox dead-letter table, for operators and the admin CLI: list, retry
 * (move back to the outbox), purge. Retries and purges run in batches of {@value #BATCH} rows,
 * one short transaction each, so millions of rows never hold locks for long. Cutoffs use the
 * database clock.
 *
 * <pre>{@code
 * DeadLetters dead = DeadLetters.of(dataSource, tables);
 * dead.list(20).forEach(System.out::println);
 * dead.retry(4711);
 * dead.purgeOlderThan(Duration.ofDays(30));
 * }</pre>
 *
 * <p>A retried row keeps its id, so it goes back to its old place in id order (before rows of
 * its routing key sent after it died), with attempts reset to 0 and its original
 * {@code created_at}. A dead row whose step key (or id) is pending in the outbox again is
 * removed rather than duplicated, and counted as {@link RetryResult#alreadyPending()}.
 */
public final class DeadLetters {
    /** Rows per retry or purge transaction: {@value}. */
    public static final int BATCH = 1000;

    private final DataSource dataSource;
    private final String list;
    private final String retryOne;
    private final String retryFrom;
    private final String purge;
    private final String countOlder;
    private final String count;

    private DeadLetters(DataSource dataSource, TxboxTables tables) {
        this.dataSource = dataSource;
        DSLContext r = Jooq.renderer(tables);
        TxboxOutboxDead d = TXBOX_OUTBOX_DEAD;
        list = r.select(d.ID, d.STEP_KEY, d.DESTINATION, d.ROUTING_KEY, d.ATTEMPTS, d.REASON, d.CREATED_AT, d.DEAD_AT,
                        DSL.when(DSL.condition(PostgresSql.param(SQLDataType.BOOLEAN)), d.PAYLOAD))
                .from(d)
                .where(PostgresSql.param(SQLDataType.VARCHAR).isNull().or(d.DESTINATION.eq(PostgresSql.param(SQLDataType.VARCHAR))))
                .orderBy(d.DEAD_AT.desc(), d.ID.desc())
                .limit(PostgresSql.param(SQLDataType.INTEGER))
                .getSQL(ParamType.INDEXED);
        retryOne = move(r, "id = ?");
        retryFrom = move(r, "id > ? AND (cast(? as text) IS NULL OR destination = ?)");
        Condition older = d.DEAD_AT.lt(PostgresSql.nowPlusMillis(PostgresSql.param(SQLDataType.BIGINT).neg()));
        purge = r.deleteFrom(d).where(d.ID.in(r.select(d.ID).from(d).where(older).orderBy(d.ID)
                        .limit(DSL.inline(BATCH)).forUpdate().skipLocked()))
                .getSQL(ParamType.INDEXED);
        countOlder = r.selectCount().from(d).where(older).getSQL(ParamType.INDEXED);
        count = r.selectCount().from(d).getSQL(ParamType.INDEXED);
    }

    /**
     * Moves a batch of dead letters picked by {@code where} back to the outbox, in one statement:
     * how many it took, how many it requeued and the highest id taken. A string around the
     * generated names, not jOOQ's DSL: the outbox id is {@code GENERATED ALWAYS}, so keeping it
     * needs {@code OVERRIDING SYSTEM VALUE}, which jOOQ 3.19 cannot render. ON CONFLICT without a
     * target: a step key (or id) pending again is dropped, not duplicated.
     */
    private static String move(DSLContext r, String where) {
        String outbox = r.render(TXBOX_OUTBOX);
        String dead = r.render(TXBOX_OUTBOX_DEAD);
        String cols = OutboxColumns.ROW.stream().map(f -> r.render(f.getUnqualifiedName())).collect(Collectors.joining(", "));
        return "WITH picked AS (SELECT id FROM " + dead + " WHERE " + where + " ORDER BY id LIMIT " + BATCH
                + " FOR UPDATE SKIP LOCKED),"
                + " gone AS (DELETE FROM " + dead + " d USING picked p WHERE d.id = p.id RETURNING d.*),"
                + " moved AS (INSERT INTO " + outbox + " (" + cols + ", available_at, attempts, last_error)"
                + " OVERRIDING SYSTEM VALUE SELECT " + cols + ", now(), 0, 'retried from dead letters: ' || reason"
                + " FROM gone ORDER BY id ON CONFLICT DO NOTHING RETURNING 1)"
                + " SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM moved), (SELECT coalesce(max(id), 0) FROM gone)";
    }

    /** Dead letters of the outbox in {@code tables}, read and changed through {@code dataSource}. */
    public static DeadLetters of(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        return new DeadLetters(dataSource, tables);
    }

    /**
     * One dead-lettered row.
     *
     * @param reason why it was dead-lettered (the last error, or "no route ...")
     * @param payload the payload, only when asked for
     */
    public record DeadLetter(long id, String stepKey, String destination, @Nullable String routingKey, int attempts,
            String reason, Instant createdAt, Instant deadAt, byte @Nullable [] payload) {
        public DeadLetter {
            Args.notNull(stepKey, "stepKey");
            Args.notNull(destination, "destination");
            Args.notNull(reason, "reason");
            Args.notNull(createdAt, "createdAt");
            Args.notNull(deadAt, "deadAt");
        }

        @Override
        public String toString() {
            return "DeadLetter[" + id + " " + stepKey + " -> " + destination + ", " + attempts + " attempts, " + reason + "]";
        }
    }

    /**
     * What a retry did.
     *
     * @param requeued rows moved back into the outbox
     * @param alreadyPending dead rows removed because their step key was pending in the outbox again
     */
    public record RetryResult(int requeued, int alreadyPending) {
        /** Dead rows the retry took: requeued plus already pending. */
        public int total() {
            return requeued + alreadyPending;
        }
    }

    /** The newest {@code limit} dead letters, newest first, without payloads. */
    public List<DeadLetter> list(int limit) {
        return list(limit, null, false);
    }

    /** The newest {@code limit} dead letters of {@code destination} (all when null), newest first. */
    public List<DeadLetter> list(int limit, @Nullable String destination, boolean withPayload) {
        if (limit < 1) {
            throw new ConfigException("limit must be at least 1, but was " + limit);
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(list)) {
            ps.setBoolean(1, withPayload);
            ps.setString(2, destination);
            ps.setString(3, destination);
            ps.setInt(4, limit);
            List<DeadLetter> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new DeadLetter(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5),
                            rs.getString(6), rs.getObject(7, OffsetDateTime.class).toInstant(),
                            rs.getObject(8, OffsetDateTime.class).toInstant(), rs.getBytes(9)));
                }
            }
            return out;
        } catch (SQLException e) {
            throw SqlErrors.translate("listing dead letters", e);
        }
    }

    /** Moves dead letter {@code id} back to the outbox; {@link RetryResult#total()} is 0 if there is none. */
    public RetryResult retry(long id) {
        long[] last = new long[1];
        return moveBatch(retryOne, "retrying dead letter " + id, ps -> ps.setLong(1, id), last);
    }

    /** Moves every dead letter back to the outbox. */
    public RetryResult retryAll() {
        return retryAll(null);
    }

    /** Moves every dead letter of {@code destination} (all when null) back to the outbox, in batches. */
    public RetryResult retryAll(@Nullable String destination) {
        int requeued = 0;
        int pending = 0;
        long[] after = {0};
        while (true) {
            long from = after[0];
            RetryResult b = moveBatch(retryFrom, "retrying dead letters", ps -> {
                ps.setLong(1, from);
                ps.setString(2, destination);
                ps.setString(3, destination);
            }, after);
            requeued += b.requeued();
            pending += b.alreadyPending();
            if (b.total() < BATCH) {
                return new RetryResult(requeued, pending);
            }
        }
    }

    /** Deletes dead letters that died more than {@code age} ago, in batches; returns how many. */
    public long purgeOlderThan(Duration age) {
        checkAge(age);
        long total = 0;
        while (true) {
            int n = update(purge, "purging dead letters", ps -> ps.setLong(1, age.toMillis()));
            total += n;
            if (n < BATCH) {
                return total;
            }
        }
    }

    /** How many dead letters {@link #purgeOlderThan(Duration)} would delete now. */
    public long countOlderThan(Duration age) {
        checkAge(age);
        return queryLong(countOlder, "counting old dead letters", ps -> ps.setLong(1, age.toMillis()));
    }

    /** Number of dead letters. */
    public long count() {
        return queryLong(count, "counting dead letters", ps -> {});
    }

    private static void checkAge(Duration age) {
        if (age == null || age.isNegative()) {
            throw new ConfigException("age must be zero or positive, but was " + age);
        }
    }

    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    private RetryResult moveBatch(String sql, String what, Binder binder, long[] lastId) {
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(true);
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                binder.bind(ps);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    int gone = rs.getInt(1);
                    int moved = rs.getInt(2);
                    lastId[0] = Math.max(lastId[0], rs.getLong(3));
                    return new RetryResult(moved, gone - moved);
                }
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }

    private long queryLong(String sql, String what, Binder binder) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }

    private int update(String sql, String what, Binder binder) {
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(true);
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                binder.bind(ps);
                return ps.executeUpdate();
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }
}
