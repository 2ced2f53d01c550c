package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.relay.PublishRecord;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Every statement the relay runs against the database, behind one seam: lane membership and
 * ownership (for {@link LaneOwnership}), the claim query ({@link #claim}), the settling of a
 * batch's outcomes, and the backlog sample. Implementations render their statements once, when
 * the relay is built (so the configured schema and prefix apply), and only bind them per call.
 * {@link PostgresRelayStore} is the PostgreSQL implementation, {@link MariaDbRelayStore} the one for
 * MariaDB and MySQL.
 * The operators' calls ({@code RelayAdmin}, {@code DeadLetters}) have theirs behind {@link OperatorStore}.
 *
 * <p>A batch is one transaction on the worker's connection: {@link #lockLanes}, {@link #claim},
 * then {@link #delete}, {@link #retry}, {@link #hold}, {@link #unhold} and {@link #deadLetter} for the outcomes;
 * while it waits for the broker, the same transaction may claim the next batch with {@link
 * #claimAfter}. No method commits.
 */
interface RelayStore {
    /** Backlogs up to this many rows are counted exactly; larger ones are estimated from the id span. */
    int EXACT_BACKLOG_LIMIT = 10_000;

    /** The store for {@code tables} on {@code dialect}'s database. */
    static RelayStore of(TxboxTables tables, Dialect dialect) {
        return dialect.isMysqlFamily() ? new MariaDbRelayStore(tables, dialect) : new PostgresRelayStore(tables);
    }

    /** Session settings of a worker's connection, so a stalled batch cannot hold its lanes' locks past the lease. */
    void prepareSession(Connection c, Duration laneLease) throws SQLException;

    /** Undoes {@link #prepareSession} before the connection goes back to its pool. */
    void resetSession(Connection c) throws SQLException;

    /** The lanes' and members' statements, on the same database. */
    LaneStore lanes();


    /**
     * The claim query: up to {@code limit} due rows of {@code lanes} in id order, without the
     * rows of the {@code skipDestinations} and without a held key's rows above the row it is held
     * at ({@link #hold}). It locks no row: the caller holds the lanes locked
     * ({@link LaneStore#lockLanes}) with their fences, so no other worker claims these lanes' rows meanwhile.
     */
    Claimed claim(Connection c, List<Short> lanes, int limit, List<String> skipDestinations) throws SQLException;

    /**
     * {@link #claim} restricted to ids above {@code afterId}: a claim above the worker's {@link
     * ClaimFloor} ({@code chain} null), or the next batch of a transaction that already holds the
     * claimed rows up to that id, so it can be claimed while they are still being published.
     *
     * <p>A chained claim takes only rows due when the transaction's first claim ran ({@link
     * Chain#dueBy}, where the database's clock moves within a transaction), and only while the
     * outbox holds no due row between {@link Chain#from} and {@code afterId} but the transaction's
     * own {@link Chain#holding} unsettled rows. A row found there committed after the first claim,
     * and its transaction may have a later row of the same key above {@code afterId}: the chained
     * claim then returns no row, and the next transaction claims from below.
     */
    Claimed claimAfter(Connection c, List<Short> lanes, int limit, List<String> skipDestinations, long afterId,
            @Nullable Chain chain) throws SQLException;

    /**
     * A batch transaction's claims so far: its first claim started above {@code from} and ran at
     * {@code dueBy} (see {@link Claimed#dueBy}); {@code holding} of its rows are still in the outbox.
     */
    record Chain(long from, int holding, @Nullable BigDecimal dueBy) {
        /**
         * Binds the chained claim's guard from parameter {@code i} on: {@link #from}, {@code afterId},
         * {@link #holding}. Returns the next parameter's index.
         */
        int bindGuard(PreparedStatement ps, int i, long afterId) throws SQLException {
            ps.setLong(i++, from);
            ps.setLong(i++, afterId);
            ps.setInt(i++, holding);
            return i;
        }
    }

    /**
     * The six claim statements a store renders: the first claim of a batch, a claim above an id,
     * and a chained claim ({@link #claimAfter}); each also leaving out destinations to skip.
     */
    record ClaimStatements(String first, String firstSkipping, String after, String afterSkipping, String chained,
            String chainedSkipping) {
        /** The statement for a claim above an id or not, chained or not, skipping destinations or not. */
        String pick(boolean aboveId, boolean isChained, boolean skip) {
            return !aboveId ? (skip ? firstSkipping : first)
                    : isChained ? (skip ? chainedSkipping : chained)
                    : (skip ? afterSkipping : after);
        }
    }

    /**
     * Claimed rows and the lane of each; {@code dueBy} is the database time the rows were due by,
     * in epoch seconds, where the database's clock moves within a transaction (null where a
     * transaction's time stands still, as on PostgreSQL).
     */
    record Claimed(List<PublishRecord> rows, short[] lanes, @Nullable BigDecimal dueBy) {}

    /**
     * The transactions writing to the outbox now, other than the caller's, as tokens that are
     * never reused: a writer locks the table before it takes an id, so every transaction that
     * holds an id it has not yet committed is among them. {@code null} where the database cannot
     * tell, and then the {@link ClaimFloor} stays at the lowest id.
     */
    @Nullable Set<String> outboxWriters(Connection c) throws SQLException;

    /** Deletes the confirmed rows. */
    void delete(Connection c, long[] ids) throws SQLException;

    /** Counts {@code addAttempts} failed attempts and makes each row due again after its delay (database time). */
    void retry(Connection c, long[] ids, String[] errors, long[] delayMillis, int[] addAttempts) throws SQLException;

    /**
     * Holds each row's routing key (in its destination) at the row, so the claim leaves out the
     * key's later rows until the hold ends: while the row is retried, or, with {@code parked},
     * after it was dead-lettered (the key is parked until an operator acts). A hold already there
     * stays; {@code parked} marks it parked. The rows all have a routing key.
     */
    void hold(Connection c, List<PublishRecord> rows, short[] lanes, boolean parked) throws SQLException;

    /** Ends the holds at the rows {@code ids}, if any: they were published, or dead-lettered without parking. */
    void unhold(Connection c, long[] ids) throws SQLException;

    /** Moves rows to the dead-letter table with their reasons, adding {@code addAttempts} to their attempts. */
    void deadLetter(Connection c, long[] ids, String[] reasons, int[] addAttempts) throws SQLException;

    /**
     * Rows in the outbox and the age of its oldest row in milliseconds, in O(1) of the backlog.
     * The count is exact up to {@link #EXACT_BACKLOG_LIMIT} rows; above that it
     * is {@code max(id) - min(id) + 1}, an upper bound that also counts ids already published out
     * of order or never committed. The oldest row is the one with the lowest id.
     */
    long[] backlog(Connection c, int timeoutSeconds) throws SQLException;

    /**
     * Runs the backlog {@code sql}, which returns the rows counted up to {@link
     * #EXACT_BACKLOG_LIMIT} + 1, the id span and the oldest row's age in milliseconds, as {@link
     * #backlog} describes.
     */
    static long[] backlog(Connection c, String sql, int timeoutSeconds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setQueryTimeout(timeoutSeconds);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long exact = rs.getLong(1);
                return new long[] {exact <= EXACT_BACKLOG_LIMIT ? exact : Math.max(exact, rs.getLong(2)), rs.getLong(3)};
            }
        }
    }

    /**
     * Which of the tables {@code names} (schema-qualified and quoted as {@code qualified}, in the
     * same order) do not exist, sorted by name.
     */
    List<String> missingTables(Connection c, List<String> names, List<String> qualified) throws SQLException;

    /** Whether {@code e} says a txbox table does not exist (an unmigrated schema). */
    boolean isUndefinedTable(Throwable e);
}
