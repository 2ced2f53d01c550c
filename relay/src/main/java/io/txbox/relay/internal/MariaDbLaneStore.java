package io.txbox.relay.internal;

import static io.txbox.internal.mariadb.schema.tables.TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD;
import static io.txbox.internal.mariadb.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.mariadb.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;
import static io.txbox.relay.internal.MariaDbRelayStore.json;
import static io.txbox.relay.internal.MariaDbRelayStore.micros;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.outbox.Lanes;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The relay's lane and member statements on MariaDB and MySQL, rendered once per relay. Lanes and
 * members change one primary key at a time in JDBC batches, after a plain read, so no statement
 * scans and locks a range another worker is renewing.
 */
final class MariaDbLaneStore implements LaneStore {
    private static final String NOW = MariaDbRelayStore.NOW;

    private final String initLanes;
    private final String heartbeat;
    private final String members;
    private final String expireMember;
    private final String countMembers;
    private final String ownedLanes;
    private final String freeLanes;
    private final String takeLane;
    private final String releaseLane;
    private final String ownedAny;
    private final String leave;
    private final String lockLanes;
    private final String renewLane;

    MariaDbLaneStore(TxboxTables tables, Dialect dialect) {
        DSLContext r = Jooq.renderer(tables, dialect);
        String l = r.render(TXBOX_RELAY_LANE);
        String m = r.render(TXBOX_RELAY_MEMBER);
        String h = r.render(TXBOX_OUTBOX_KEY_HOLD);

        StringBuilder values = new StringBuilder();
        for (int lane = 0; lane < Lanes.COUNT; lane++) {
            values.append(lane == 0 ? "" : ", ").append('(').append(lane).append(')');
        }
        initLanes = "INSERT INTO " + l + " (lane) VALUES " + values + " ON DUPLICATE KEY UPDATE lane = lane";

        heartbeat = "INSERT INTO " + m + " (member_id, lease_until) VALUES (?, " + NOW + " + INTERVAL ? MICROSECOND)"
                + " ON DUPLICATE KEY UPDATE lease_until = VALUES(lease_until)";
        // a plain read of every member, then one primary key per delete in member_id order: no
        // scan locks a member row another worker is renewing, so membership upkeep cannot deadlock
        members = "SELECT member_id, lease_until > " + NOW + ", lease_until < " + NOW + " FROM " + m
                + " ORDER BY member_id";
        expireMember = "DELETE FROM " + m + " WHERE member_id = ? AND lease_until < " + NOW;
        countMembers = "SELECT count(*) FROM " + m + " WHERE lease_until > " + NOW;

        ownedLanes = "SELECT lane, fence FROM " + l + " WHERE owner = ? AND lease_until > " + NOW + " ORDER BY lane";
        // SKIP LOCKED: a lane whose owner is mid-batch holds its row lock, so it cannot be taken over
        freeLanes = "SELECT lane, fence FROM " + l + " WHERE owner IS NULL OR lease_until < " + NOW
                + " ORDER BY lane LIMIT ? FOR UPDATE SKIP LOCKED";
        takeLane = "UPDATE " + l + " SET owner = ?, fence = fence + 1, lease_until = " + NOW + " + INTERVAL ? MICROSECOND"
                + " WHERE lane = ?";
        releaseLane = "UPDATE " + l + " SET owner = NULL, lease_until = NULL WHERE lane = ? AND owner = ?";
        // a plain read, then one primary key per update: no scan locks the other members' lanes
        ownedAny = "SELECT lane FROM " + l + " WHERE owner = ?";
        leave = "DELETE FROM " + m + " WHERE member_id = ?";

        // with the lowest row a key of the lane is held at: the worker's claim floor stays below it.
        // The lane ids first, then each lane row by its primary key (STRAIGHT_JOIN keeps that order): an
        // IN list scans the lane table, and a locking scan waits for every other worker's lanes until
        // their batches commit, which made the workers take turns
        lockLanes = "SELECT x.lane, x.fence, COALESCE(x.blocked_until > " + NOW + ", 0), (SELECT min(h.row_id) FROM " + h
                + " h WHERE h.lane = x.lane) FROM " + MariaDbRelayStore.IDS_TABLE.formatted("smallint")
                + " STRAIGHT_JOIN " + l + " AS x ON x.lane = j.v WHERE x.owner = ? FOR UPDATE";
        renewLane = "UPDATE " + l + " SET lease_until = " + NOW + " + INTERVAL ? MICROSECOND WHERE lane = ?";
    }

    @Override
    public int heartbeat(Connection c, String memberId, List<String> ownWorkers, Duration lease) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(heartbeat)) {
            ps.setString(1, memberId);
            ps.setLong(2, micros(lease.toMillis()));
            ps.executeUpdate();
        }
        // The renewal commits alone. A transaction that kept this member's row locked while it
        // deleted the expired ones would deadlock with another member's doing the same, since a
        // range delete waits for every row it reads, the renewed ones included.
        c.commit();
        Set<String> own = new HashSet<>(ownWorkers);
        int others = 0;
        List<String> expired = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(members); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String member = rs.getString(1);
                if (rs.getBoolean(2)) {
                    if (!own.contains(member)) {
                        others++;
                    }
                } else if (rs.getBoolean(3)) {
                    expired.add(member);
                }
            }
        }
        if (!expired.isEmpty()) {
            // in member_id order, one row each: two members expiring the same rows lock them in the same order
            try (PreparedStatement ps = c.prepareStatement(expireMember)) {
                for (String member : expired) {
                    ps.setString(1, member);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
        }
        return others + ownWorkers.size();
    }

    @Override
    public Map<Short, Long> owned(Connection c, String memberId) throws SQLException {
        return LaneStore.laneFences(c, ownedLanes, memberId);
    }

    @Override
    public Map<Short, Long> take(Connection c, String memberId, int max, Duration lease) throws SQLException {
        Map<Short, Long> taken;
        try (PreparedStatement ps = c.prepareStatement(freeLanes)) {
            ps.setInt(1, max);
            taken = LaneStore.laneFences(ps);
        }
        taken.replaceAll((lane, fence) -> fence + 1); // the fence the update below sets
        if (taken.isEmpty()) {
            return taken;
        }
        try (PreparedStatement ps = c.prepareStatement(takeLane)) {
            for (Short lane : taken.keySet()) {
                ps.setString(1, memberId);
                ps.setLong(2, micros(lease.toMillis()));
                ps.setShort(3, lane);
                ps.addBatch();
            }
            ps.executeBatch();
        }
        return taken;
    }

    @Override
    public void release(Connection c, String memberId, List<Short> lanes) throws SQLException {
        if (lanes.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(releaseLane)) {
            for (Short lane : lanes) {
                ps.setShort(1, lane);
                ps.setString(2, memberId);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    @Override
    public void leave(Connection c, String memberId) throws SQLException {
        List<Short> lanes = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(ownedAny)) {
            ps.setString(1, memberId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    lanes.add(rs.getShort(1));
                }
            }
        }
        release(c, memberId, lanes);
        LaneStore.update(c, leave, memberId);
    }

    @Override
    public Locked lockLanes(Connection c, String memberId, Map<Short, Long> owned, boolean renew, Duration lease)
            throws SQLException {
        Map<Short, Boolean> held = new LinkedHashMap<>();
        long heldFrom = 0;
        try (PreparedStatement ps = c.prepareStatement(lockLanes)) {
            // in lane order, as every worker locks its lanes
            ps.setString(1, json(new java.util.TreeSet<>(owned.keySet())));
            ps.setString(2, memberId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    short lane = rs.getShort(1);
                    if (owned.get(lane) == rs.getLong(2)) {
                        held.put(lane, rs.getBoolean(3));
                        long from = rs.getLong(4);
                        if (from > 0 && (heldFrom == 0 || from < heldFrom)) {
                            heldFrom = from;
                        }
                    }
                }
            }
        }
        if (held.isEmpty()) {
            return new Locked(held, -1, 0);
        }
        if (renew) {
            try (PreparedStatement ps = c.prepareStatement(renewLane)) {
                for (Short lane : held.keySet()) {
                    ps.setLong(1, micros(lease.toMillis()));
                    ps.setShort(2, lane);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
        }
        // read in every batch so a membership change (a relay joining, leaving or expiring) is seen at once
        try (PreparedStatement ps = c.prepareStatement(countMembers); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new Locked(held, rs.getInt(1), heldFrom);
        }
    }

    @Override
    public void initLanes(Connection c) throws SQLException {
        LaneStore.update(c, initLanes);
    }
}
