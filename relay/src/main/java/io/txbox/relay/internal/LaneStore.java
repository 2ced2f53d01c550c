package io.txbox.relay.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The relay's lanes and members on one database ({@link RelayStore#lanes}): what {@link
 * LaneOwnership} reads and writes to share the 64 lanes among the live workers, each lane with an
 * owner, a lease and a fence. No method commits unless it says so.
 */
interface LaneStore {
    /** Creates the lane rows if they are missing; idempotent. */
    void initLanes(Connection c) throws SQLException;

    /**
     * Renews the member's lease, drops expired members, and returns the number of live members,
     * counting each of {@code ownWorkers} (this relay's workers, {@code memberId} among them) as
     * live even before it has registered: a relay's workers start together, so none of them takes
     * more than its share. The caller commits afterwards; a store may also commit on {@code c}
     * in between (MariaDB commits the renewal before it drops expired members).
     */
    int heartbeat(Connection c, String memberId, List<String> ownWorkers, Duration lease) throws SQLException;

    /** Lanes this member holds with an unexpired lease: lane to fence. */
    Map<Short, Long> owned(Connection c, String memberId) throws SQLException;

    /**
     * Takes up to {@code max} free or expired lanes, bumping their fences: lane to new fence. A
     * lane whose owner is mid-batch holds its row lock and is skipped, so it cannot be taken over.
     */
    Map<Short, Long> take(Connection c, String memberId, int max, Duration lease) throws SQLException;

    /** Gives up {@code lanes} if this member still owns them. */
    void release(Connection c, String memberId, List<Short> lanes) throws SQLException;

    /** Releases every lane of the member and removes its membership. */
    void leave(Connection c, String memberId) throws SQLException;

    /**
     * Locks the member's lanes for this transaction, renewing their lease if {@code renew}, and
     * returns the lanes still held (same owner and fence) with whether each is blocked, the
     * number of live members, and the lowest row a key of those lanes is held at ({@link RelayStore#hold}).
     * A lane missing from the result was lost to another member.
     */
    Locked lockLanes(Connection c, String memberId, Map<Short, Long> owned, boolean renew, Duration lease)
            throws SQLException;

    /**
     * Lanes still held, each with whether it is blocked; live members, or -1 when no lane is held;
     * the lowest row id a key of the held lanes is held at, 0 when none is.
     */
    record Locked(Map<Short, Boolean> held, int members, long heldFrom) {}

    /** Runs the update {@code sql}, whose parameters are {@code params} in order (none, or the member id). */
    static void update(Connection c, String sql, String... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setString(i + 1, params[i]);
            }
            ps.executeUpdate();
        }
    }

    /** The rows {@code sql} selects for {@code memberId}, its one parameter: each a lane and its fence, in order. */
    static Map<Short, Long> laneFences(Connection c, String sql, String memberId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, memberId);
            return laneFences(ps);
        }
    }

    /** The rows of {@code ps}, each a lane and its fence, in order. */
    static Map<Short, Long> laneFences(PreparedStatement ps) throws SQLException {
        Map<Short, Long> lanes = new LinkedHashMap<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                lanes.put(rs.getShort(1), rs.getLong(2));
            }
        }
        return lanes;
    }
}
