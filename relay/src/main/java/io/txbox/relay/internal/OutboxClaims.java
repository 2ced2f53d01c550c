package io.txbox.relay.internal;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.schema.tables.TxboxOutbox;
import io.txbox.outbox.Lanes;
import io.txbox.relay.PublishRecord;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.conf.ParamType;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;

/**
 * Every statement the relay runs, rendered once per relay from the generated tables (so the
 * configured schema and prefix apply) and then only bound and executed. The claim query is
 * {@link #claim}; a batch is {@link #lockLanes}, {@link #claim}, then {@link #delete}, {@link
 * #retry}, {@link #deadLetter} and {@link #block} for the outcomes, in one transaction.
 */
public final class OutboxClaims {
    /** Backlogs up to this many rows are counted exactly; larger ones are estimated from the id span. */
    static final int EXACT_BACKLOG_LIMIT = 10_000;
    /** Longest last_error / reason stored, in chars. */
    static final int MAX_ERROR_CHARS = 2000;

    private final String initLanes;
    private final String heartbeat;
    private final String expireMembers;
    private final String liveMembers;
    private final String ownedLanes;
    private final String takeLanes;
    private final String releaseLanes;
    private final String releaseAll;
    private final String leave;
    private final String renewLanes;
    private final String lockLanes;
    private final String claim;
    private final String claimSkipping;
    private final String delete;
    private final String retry;
    private final String block;
    private final String deadLetter;
    private final String backlog;

    public OutboxClaims(TxboxTables tables) {
        DSLContext r = Jooq.renderer(tables);
        TxboxOutbox o = TXBOX_OUTBOX;
        String outbox = r.render(o);
        String dead = r.render(TXBOX_OUTBOX_DEAD);
        String lane = r.render(TXBOX_RELAY_LANE);
        String member = r.render(TXBOX_RELAY_MEMBER);

        initLanes = "INSERT INTO " + lane + " (lane) SELECT g::smallint FROM generate_series(0, " + (Lanes.COUNT - 1)
                + ") g ON CONFLICT (lane) DO NOTHING";
        heartbeat = "INSERT INTO " + member + " (member_id, lease_until) VALUES (?, now() + ? * interval '1 millisecond')"
                + " ON CONFLICT (member_id) DO UPDATE SET lease_until = excluded.lease_until";
        expireMembers = "DELETE FROM " + member + " WHERE lease_until < now()";
        // members other than the given ones (this relay's own workers, counted whether or not they have registered yet)
        liveMembers = "SELECT count(*) FROM " + member + " WHERE lease_until > now() AND member_id <> ALL(?)";
        // read in every batch so a membership change (a relay joining, leaving or expiring) is seen at once
        String memberCount = "(SELECT count(*) FROM " + member + " WHERE lease_until > now())";
        ownedLanes = "SELECT lane, fence FROM " + lane + " WHERE owner = ? AND lease_until > now() ORDER BY lane";
        // SKIP LOCKED: a lane whose owner is mid-batch holds its row lock, so it cannot be taken over
        takeLanes = "UPDATE " + lane + " AS l SET owner = ?, fence = l.fence + 1,"
                + " lease_until = now() + ? * interval '1 millisecond'"
                + " FROM (SELECT lane FROM " + lane + " WHERE owner IS NULL OR lease_until < now()"
                + " ORDER BY lane LIMIT ? FOR UPDATE SKIP LOCKED) AS free"
                + " WHERE l.lane = free.lane RETURNING l.lane, l.fence";
        releaseLanes = "UPDATE " + lane + " SET owner = NULL, lease_until = NULL WHERE owner = ? AND lane = ANY(?)";
        releaseAll = "UPDATE " + lane + " SET owner = NULL, lease_until = NULL WHERE owner = ?";
        leave = "DELETE FROM " + member + " WHERE member_id = ?";
        // both lock the worker's lanes for the batch and return only those it still holds with its fence
        renewLanes = "UPDATE " + lane + " AS l SET lease_until = now() + ? * interval '1 millisecond'"
                + " FROM unnest(?::smallint[], ?::bigint[]) AS mine(lane, fence)"
                + " WHERE l.lane = mine.lane AND l.fence = mine.fence AND l.owner = ?"
                + " RETURNING l.lane, coalesce(l.blocked_until > now(), false), " + memberCount;
        lockLanes = "SELECT l.lane, coalesce(l.blocked_until > now(), false), " + memberCount + " FROM " + lane + " AS l"
                + " JOIN unnest(?::smallint[], ?::bigint[]) AS mine(lane, fence)"
                + " ON l.lane = mine.lane AND l.fence = mine.fence WHERE l.owner = ? FOR NO KEY UPDATE OF l";
        claim = claimQuery(r, DSL.noCondition());
        // only while a destination waits for its target: its rows stay unclaimed, in order
        claimSkipping = claimQuery(r, o.DESTINATION.ne(DSL.all(DSL.val(null, SQLDataType.VARCHAR.array()))));
        delete = r.deleteFrom(o).where(o.ID.eq(DSL.any(DSL.val(null, SQLDataType.BIGINT.array()))))
                .getSQL(ParamType.INDEXED);
        retry = "UPDATE " + outbox + " AS o SET attempts = o.attempts + f.extra, last_error = f.error,"
                + " available_at = now() + f.delay_ms * interval '1 millisecond'"
                + " FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::int[]) AS f(id, error, delay_ms, extra) WHERE o.id = f.id";
        block = "UPDATE " + lane + " AS l SET blocked_until = greatest(l.blocked_until, now() + b.delay_ms * interval '1 millisecond')"
                + " FROM unnest(?::smallint[], ?::bigint[]) AS b(lane, delay_ms) WHERE l.lane = b.lane";
        String cols = "id, step_key, original_key, destination, routing_key, lane, payload, header_names, header_values,"
                + " content_type, traceparent, tracestate, created_at";
        deadLetter = "WITH gone AS (DELETE FROM " + outbox + " AS o USING unnest(?::bigint[], ?::text[], ?::int[])"
                + " AS d(id, reason, extra) WHERE o.id = d.id RETURNING o.*, d.reason AS dead_reason, d.extra AS dead_extra)"
                + " INSERT INTO " + dead + " (" + cols + ", attempts, reason)"
                + " SELECT " + cols + ", attempts + dead_extra, dead_reason FROM gone"
                // a row retried from the dead letters keeps its id; if it dies again, the new reason wins
                + " ON CONFLICT (id) DO UPDATE SET attempts = excluded.attempts, reason = excluded.reason, dead_at = now()";
        // O(1) in the backlog: a count stopped after EXACT_BACKLOG_LIMIT + 1 rows, the id span and the
        // lowest id's age, each read from the primary key's ends (a full count took 0.5 s at 1M rows)
        backlog = "SELECT (SELECT count(*) FROM (SELECT 1 FROM " + outbox + " ORDER BY id LIMIT " + (EXACT_BACKLOG_LIMIT + 1)
                + ") s), (SELECT coalesce(max(id) - min(id) + 1, 0) FROM " + outbox + "),"
                + " coalesce((SELECT extract(epoch FROM now() - created_at) * 1000 FROM " + outbox
                + " ORDER BY id LIMIT 1), 0)::bigint";
    }

    private static String claimQuery(DSLContext r, io.txbox.internal.shaded.jooq.Condition skip) {
        TxboxOutbox o = TXBOX_OUTBOX;
        return r.select(o.ID, o.STEP_KEY, o.ORIGINAL_KEY, o.DESTINATION, o.ROUTING_KEY, o.LANE, o.PAYLOAD,
                        o.HEADER_NAMES, o.HEADER_VALUES, o.CONTENT_TYPE, o.TRACEPARENT, o.TRACESTATE, o.ATTEMPTS,
                        o.CREATED_AT)
                .from(o)
                .where(o.LANE.eq(DSL.any(DSL.val(null, SQLDataType.SMALLINT.array()))))
                .and(o.AVAILABLE_AT.le(DSL.currentOffsetDateTime()))
                .and(skip)
                .orderBy(o.ID)
                .limit(DSL.val(0))
                .forUpdate().skipLocked()
                .getSQL(ParamType.INDEXED);
    }

    /** The claim query, for documentation and tests. */
    public String claimSql() {
        return claim;
    }

    /** The delete of confirmed rows, for documentation and tests. */
    public String deleteSql() {
        return delete;
    }

    void initLanes(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(initLanes)) {
            ps.executeUpdate();
        }
    }

    /**
     * Renews the member's lease and returns the number of live members, counting each of {@code
     * ownWorkers} (this relay's workers, {@code memberId} among them) as live even before it has
     * registered: a relay's workers start together, so none of them takes more than its share.
     */
    int heartbeat(Connection c, String memberId, List<String> ownWorkers, Duration lease) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(heartbeat)) {
            ps.setString(1, memberId);
            ps.setLong(2, lease.toMillis());
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(expireMembers)) {
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(liveMembers)) {
            ps.setArray(1, c.createArrayOf("text", ownWorkers.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) + ownWorkers.size();
            }
        }
    }

    /** Lanes this member holds with an unexpired lease: lane to fence. */
    Map<Short, Long> owned(Connection c, String memberId) throws SQLException {
        Map<Short, Long> owned = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(ownedLanes)) {
            ps.setString(1, memberId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    owned.put(rs.getShort(1), rs.getLong(2));
                }
            }
        }
        return owned;
    }

    /** Takes up to {@code max} free or expired lanes, bumping their fences: lane to new fence. */
    Map<Short, Long> take(Connection c, String memberId, int max, Duration lease) throws SQLException {
        Map<Short, Long> taken = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(takeLanes)) {
            ps.setString(1, memberId);
            ps.setLong(2, lease.toMillis());
            ps.setInt(3, max);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    taken.put(rs.getShort(1), rs.getLong(2));
                }
            }
        }
        return taken;
    }

    void release(Connection c, String memberId, List<Short> lanes) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseLanes)) {
            ps.setString(1, memberId);
            ps.setArray(2, c.createArrayOf("int2", lanes.toArray()));
            ps.executeUpdate();
        }
    }

    void leave(Connection c, String memberId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseAll)) {
            ps.setString(1, memberId);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(leave)) {
            ps.setString(1, memberId);
            ps.executeUpdate();
        }
    }

    /**
     * Locks the member's lanes for this transaction, renewing their lease if {@code renew}, and
     * returns the lanes still held (same owner and fence) with whether each is blocked, and the
     * number of live members. A lane missing from the result was lost to another member.
     */
    Locked lockLanes(Connection c, String memberId, Map<Short, Long> owned, boolean renew, Duration lease)
            throws SQLException {
        Short[] lanes = owned.keySet().toArray(Short[]::new);
        Long[] fences = owned.values().toArray(Long[]::new);
        Map<Short, Boolean> held = new LinkedHashMap<>();
        int members = -1;
        try (PreparedStatement ps = c.prepareStatement(renew ? renewLanes : lockLanes)) {
            int i = 1;
            if (renew) {
                ps.setLong(i++, lease.toMillis());
            }
            ps.setArray(i++, c.createArrayOf("int2", lanes));
            ps.setArray(i++, c.createArrayOf("int8", fences));
            ps.setString(i, memberId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    held.put(rs.getShort(1), rs.getBoolean(2));
                    members = rs.getInt(3);
                }
            }
        }
        return new Locked(held, members);
    }

    /** Lanes still held, each with whether it is blocked; live members, or -1 when no lane is held. */
    record Locked(Map<Short, Boolean> held, int members) {}

    /**
     * Claims up to {@code limit} due rows of {@code lanes} in id order, locking them; locked rows
     * and rows of the {@code skipDestinations} are skipped.
     */
    Claimed claim(Connection c, List<Short> lanes, int limit, List<String> skipDestinations) throws SQLException {
        List<PublishRecord> rows = new ArrayList<>(Math.min(limit, 1024));
        short[] rowLanes = new short[limit];
        boolean skip = !skipDestinations.isEmpty();
        try (PreparedStatement ps = c.prepareStatement(skip ? claimSkipping : claim)) {
            int i = 1;
            ps.setArray(i++, c.createArrayOf("int2", lanes.toArray()));
            if (skip) {
                ps.setArray(i++, c.createArrayOf("varchar", skipDestinations.toArray()));
            }
            ps.setInt(i, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rowLanes[rows.size()] = rs.getShort(6);
                    rows.add(new PublishRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getBytes(7), headers(rs.getArray(8), rs.getArray(9)), rs.getString(10),
                            rs.getString(11), rs.getString(12), rs.getInt(13),
                            rs.getObject(14, OffsetDateTime.class).toInstant()));
                }
            }
        }
        return new Claimed(rows, rowLanes);
    }

    /** Claimed rows and the lane of each. */
    record Claimed(List<PublishRecord> rows, short[] lanes) {}

    private static Map<String, String> headers(Array names, Array values) throws SQLException {
        if (names == null || values == null) {
            return Map.of();
        }
        String[] n = (String[]) names.getArray();
        String[] v = (String[]) values.getArray();
        Map<String, String> headers = new LinkedHashMap<>(n.length * 2);
        for (int i = 0; i < n.length && i < v.length; i++) {
            headers.put(n[i], v[i]);
        }
        return headers;
    }

    int delete(Connection c, long[] ids) throws SQLException {
        if (ids.length == 0) {
            return 0;
        }
        try (PreparedStatement ps = c.prepareStatement(delete)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            return ps.executeUpdate();
        }
    }

    /** Counts a failed attempt and makes each row due again after its delay. */
    void retry(Connection c, long[] ids, String[] errors, long[] delayMillis, int[] addAttempts) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(retry)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            ps.setArray(2, c.createArrayOf("text", errors));
            ps.setArray(3, c.createArrayOf("int8", box(delayMillis)));
            ps.setArray(4, c.createArrayOf("int4", box(addAttempts)));
            ps.executeUpdate();
        }
    }

    /** Keeps each lane from being claimed for at least its delay, so no later row overtakes a failed one. */
    void block(Connection c, Map<Short, Long> delayMillisByLane) throws SQLException {
        if (delayMillisByLane.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(block)) {
            ps.setArray(1, c.createArrayOf("int2", delayMillisByLane.keySet().toArray()));
            ps.setArray(2, c.createArrayOf("int8", delayMillisByLane.values().toArray()));
            ps.executeUpdate();
        }
    }

    /** Moves rows to the dead-letter table with their reasons, adding {@code addAttempts} to their attempts. */
    void deadLetter(Connection c, long[] ids, String[] reasons, int[] addAttempts) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(deadLetter)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            ps.setArray(2, c.createArrayOf("text", reasons));
            ps.setArray(3, c.createArrayOf("int4", box(addAttempts)));
            ps.executeUpdate();
        }
    }

    /**
     * Rows in the outbox and the age of its oldest row, in milliseconds. The count is exact up to
     * {@value #EXACT_BACKLOG_LIMIT} rows; above that it is {@code max(id) - min(id) + 1}, an upper
     * bound that also counts ids already published out of order or never committed. The oldest
     * row is the one with the lowest id.
     */
    long[] backlog(Connection c, int timeoutSeconds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(backlog)) {
            ps.setQueryTimeout(timeoutSeconds);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long exact = rs.getLong(1);
                return new long[] {exact <= EXACT_BACKLOG_LIMIT ? exact : Math.max(exact, rs.getLong(2)), rs.getLong(3)};
            }
        }
    }

    private static Long[] box(long[] values) {
        Long[] boxed = new Long[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return boxed;
    }

    private static Integer[] box(int[] values) {
        Integer[] boxed = new Integer[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return boxed;
    }

    static String clip(String s) {
        return s.length() <= MAX_ERROR_CHARS ? s : s.substring(0, MAX_ERROR_CHARS - 3) + "...";
    }
}
