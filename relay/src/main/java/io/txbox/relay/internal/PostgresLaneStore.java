package io.txbox.relay.internal;

import static io.txbox.internal.PostgresSql.column;
import static io.txbox.internal.PostgresSql.nowPlusMillis;
import static io.txbox.internal.PostgresSql.param;
import static io.txbox.internal.PostgresSql.sql;
import static io.txbox.internal.PostgresSql.unnest;
import static io.txbox.internal.schema.tables.TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD;
import static io.txbox.internal.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.schema.tables.TxboxOutboxKeyHold;
import io.txbox.internal.schema.tables.TxboxRelayLane;
import io.txbox.internal.schema.tables.TxboxRelayMember;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.InsertValuesStep1;
import io.txbox.internal.shaded.jooq.Table;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import io.txbox.outbox.Lanes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The relay's lane and member statements on PostgreSQL, built with jOOQ's DSL and rendered once per relay. */
final class PostgresLaneStore implements LaneStore {
    private static final TxboxRelayLane L = TXBOX_RELAY_LANE.as("l");
    private static final TxboxRelayMember M = TXBOX_RELAY_MEMBER;
    private static final TxboxOutboxKeyHold H = TXBOX_OUTBOX_KEY_HOLD.as("h");
    private static final Field<OffsetDateTime> NOW = DSL.currentOffsetDateTime();

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

    PostgresLaneStore(TxboxTables tables) {
        DSLContext r = Jooq.renderer(tables);
        InsertValuesStep1<?, Short> lanes = r.insertInto(TXBOX_RELAY_LANE, TXBOX_RELAY_LANE.LANE);
        for (int lane = 0; lane < Lanes.COUNT; lane++) {
            lanes = lanes.values(DSL.inline((short) lane));
        }
        initLanes = sql(lanes.onConflict(TXBOX_RELAY_LANE.LANE).doNothing());

        heartbeat = sql(r.insertInto(M, M.MEMBER_ID, M.LEASE_UNTIL)
                .values(param(SQLDataType.VARCHAR), nowPlusMillis(param(SQLDataType.BIGINT)))
                .onConflict(M.MEMBER_ID).doUpdate().set(M.LEASE_UNTIL, DSL.excluded(M.LEASE_UNTIL)));
        expireMembers = sql(r.deleteFrom(M).where(M.LEASE_UNTIL.lt(NOW)));
        // members other than the given ones (this relay's own workers, counted whether or not they have registered yet)
        liveMembers = sql(r.selectCount().from(M).where(M.LEASE_UNTIL.gt(NOW))
                .and(M.MEMBER_ID.ne(DSL.all(param(SQLDataType.VARCHAR.array())))));
        // read in every batch so a membership change (a relay joining, leaving or expiring) is seen at once
        Field<Integer> memberCount = DSL.field(r.selectCount().from(M).where(M.LEASE_UNTIL.gt(NOW)));
        Field<Boolean> blocked = DSL.coalesce(DSL.field(L.BLOCKED_UNTIL.gt(NOW)), DSL.inline(false));
        // the lowest row a key of the lane is held at: the worker's claim floor stays below it
        Field<Long> heldFrom = DSL.field(r.select(DSL.min(H.ROW_ID)).from(H).where(H.LANE.eq(L.LANE)));

        ownedLanes = sql(r.select(L.LANE, L.FENCE).from(L).where(L.OWNER.eq(param(SQLDataType.VARCHAR)))
                .and(L.LEASE_UNTIL.gt(NOW)).orderBy(L.LANE));
        // SKIP LOCKED: a lane whose owner is mid-batch holds its row lock, so it cannot be taken over
        TxboxRelayLane all = TXBOX_RELAY_LANE;
        Table<?> free = r.select(all.LANE).from(all).where(all.OWNER.isNull().or(all.LEASE_UNTIL.lt(NOW)))
                .orderBy(all.LANE).limit(param(SQLDataType.INTEGER)).forUpdate().skipLocked().asTable("free");
        takeLanes = sql(r.update(L).set(L.OWNER, param(SQLDataType.VARCHAR)).set(L.FENCE, L.FENCE.plus(DSL.inline(1L)))
                .set(L.LEASE_UNTIL, nowPlusMillis(param(SQLDataType.BIGINT)))
                .from(free).where(L.LANE.eq(free.field(all.LANE))).returningResult(L.LANE, L.FENCE));
        Condition mineOnly = L.OWNER.eq(param(SQLDataType.VARCHAR));
        releaseLanes = sql(r.update(L).set(L.OWNER, DSL.inline(null, L.OWNER)).set(L.LEASE_UNTIL, DSL.inline(null, L.LEASE_UNTIL))
                .where(mineOnly).and(L.LANE.eq(DSL.any(param(SQLDataType.SMALLINT.array())))));
        releaseAll = sql(r.update(L).set(L.OWNER, DSL.inline(null, L.OWNER)).set(L.LEASE_UNTIL, DSL.inline(null, L.LEASE_UNTIL))
                .where(mineOnly));
        leave = sql(r.deleteFrom(M).where(M.MEMBER_ID.eq(param(SQLDataType.VARCHAR))));

        // both lock the worker's lanes for the batch and return only those it still holds with its fence
        Table<?> mine = unnest("mine", List.of("lane", "fence"), SQLDataType.SMALLINT, SQLDataType.BIGINT);
        Condition held = L.LANE.eq(column("mine", "lane", Short.class)).and(L.FENCE.eq(column("mine", "fence", Long.class)));
        renewLanes = sql(r.update(L).set(L.LEASE_UNTIL, nowPlusMillis(param(SQLDataType.BIGINT))).from(mine)
                .where(held).and(L.OWNER.eq(param(SQLDataType.VARCHAR)))
                .returningResult(L.LANE, blocked, memberCount, heldFrom));
        lockLanes = sql(r.select(L.LANE, blocked, memberCount, heldFrom).from(L).join(mine).on(held)
                .where(L.OWNER.eq(param(SQLDataType.VARCHAR))).forNoKeyUpdate().of(L));
    }

    @Override
    public int heartbeat(Connection c, String memberId, List<String> ownWorkers, Duration lease) throws SQLException {
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

    @Override
    public Map<Short, Long> owned(Connection c, String memberId) throws SQLException {
        return LaneStore.laneFences(c, ownedLanes, memberId);
    }

    @Override
    public Map<Short, Long> take(Connection c, String memberId, int max, Duration lease) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(takeLanes)) {
            ps.setString(1, memberId);
            ps.setLong(2, lease.toMillis());
            ps.setInt(3, max);
            return LaneStore.laneFences(ps);
        }
    }

    @Override
    public void release(Connection c, String memberId, List<Short> lanes) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseLanes)) {
            ps.setString(1, memberId);
            ps.setArray(2, c.createArrayOf("int2", lanes.toArray()));
            ps.executeUpdate();
        }
    }

    @Override
    public void leave(Connection c, String memberId) throws SQLException {
        LaneStore.update(c, releaseAll, memberId);
        LaneStore.update(c, leave, memberId);
    }

    @Override
    public Locked lockLanes(Connection c, String memberId, Map<Short, Long> owned, boolean renew, Duration lease)
            throws SQLException {
        Short[] lanes = owned.keySet().toArray(Short[]::new);
        Long[] fences = owned.values().toArray(Long[]::new);
        Map<Short, Boolean> held = new LinkedHashMap<>();
        int members = -1;
        long heldFrom = 0;
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
                    long from = rs.getLong(4);
                    if (from > 0 && (heldFrom == 0 || from < heldFrom)) {
                        heldFrom = from;
                    }
                }
            }
        }
        return new Locked(held, members, heldFrom);
    }

    @Override
    public void initLanes(Connection c) throws SQLException {
        LaneStore.update(c, initLanes);
    }
}
