package io.txbox.relay.internal;

import io.txbox.relay.DeadLetters;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The operators' statements on parked keys (the relay's per-key holds whose row was
 * dead-lettered), for both databases: the statements are the same but for how a time is read,
 * which each {@link OperatorStore} supplies ({@code time}, {@code now} and its {@link
 * OperatorStore.Times}). Each runs on the caller's connection and never commits.
 */
public final class ParkedKeys {
    private final OperatorStore.Times times;
    private final String list;
    private final String find;
    private final String unparkRequeued;
    private final String skipDead;
    private final String skipHold;
    private final String releasePurged;
    private final String summary;

    /**
     * @param hold the rendered hold table
     * @param outbox the rendered outbox table
     * @param dead the rendered dead-letter table
     * @param time how a timestamp column is selected so that {@code times} reads it ({@code %s} the column)
     * @param now the database's current time
     */
    ParkedKeys(String hold, String outbox, String dead, String time, String now, OperatorStore.Times times) {
        this.times = times;
        String waiting = "(SELECT count(*) FROM " + outbox + " o WHERE o.lane = h.lane AND o.destination = h.destination"
                + " AND o.routing_key = h.routing_key AND o.id > h.row_id)";
        list = "SELECT h.row_id, h.destination, h.routing_key, " + String.format(time, "h.parked_at") + ", "
                + String.format(time, now) + ", " + waiting + " FROM " + hold + " h WHERE h.parked_at IS NOT NULL"
                + " ORDER BY h.parked_at, h.row_id LIMIT ?";
        find = "SELECT min(row_id) FROM " + hold + " WHERE destination = ? AND routing_key = ? AND parked_at IS NOT NULL";
        // a parked key whose dead row is back in the outbox is no longer parked: its hold stays, so
        // the key's later rows still wait until that row is published
        unparkRequeued = "UPDATE " + hold + " SET parked_at = NULL WHERE parked_at IS NOT NULL AND EXISTS (SELECT 1 FROM "
                + outbox + " o WHERE o.id = " + hold + ".row_id)";
        skipDead = "DELETE FROM " + dead + " WHERE id = ?";
        skipHold = "DELETE FROM " + hold + " WHERE row_id = ?";
        // a purged dead row releases its key, as a skip does
        releasePurged = "DELETE FROM " + hold + " WHERE parked_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM " + dead
                + " d WHERE d.id = " + hold + ".row_id) AND NOT EXISTS (SELECT 1 FROM " + outbox + " o WHERE o.id = "
                + hold + ".row_id)";
        summary = "SELECT count(*), " + String.format(time, "min(parked_at)") + ", " + String.format(time, now) + " FROM "
                + hold + " WHERE parked_at IS NOT NULL";
    }

    /** The {@code limit} longest-parked keys, longest first. */
    public List<DeadLetters.ParkedKey> list(Connection c, int limit) throws SQLException {
        List<DeadLetters.ParkedKey> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(list)) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Instant parkedAt = times.at(rs, 4);
                    out.add(new DeadLetters.ParkedKey(rs.getString(2), rs.getString(3), rs.getLong(1), parkedAt,
                            nonNegative(Duration.between(parkedAt, times.at(rs, 5))), rs.getLong(6)));
                }
            }
        }
        return out;
    }

    /** The dead row the key is parked at, or null when the key is not parked. */
    public @Nullable Long find(Connection c, String destination, String routingKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(find)) {
            ps.setString(1, destination);
            ps.setString(2, routingKey);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long id = rs.getLong(1);
                return rs.wasNull() ? null : id;
            }
        }
    }

    /** After dead rows went back to the outbox: their keys are no longer parked (still held at them). */
    public void unparkRequeued(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(unparkRequeued)) {
            ps.executeUpdate();
        }
    }

    /** Drops dead row {@code id} for good and ends the hold at it; whether a dead row was there. */
    public boolean skip(Connection c, long id) throws SQLException {
        int dead;
        try (PreparedStatement ps = c.prepareStatement(skipDead)) {
            ps.setLong(1, id);
            dead = ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(skipHold)) {
            ps.setLong(1, id);
            ps.executeUpdate();
        }
        return dead > 0;
    }

    /** After a purge: the keys parked at purged rows are released. */
    public void releasePurged(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releasePurged)) {
            ps.executeUpdate();
        }
    }

    /** Parked keys and the age of the longest-parked one (null when none). */
    public DeadLetters.Parked summary(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(summary); ResultSet rs = ps.executeQuery()) {
            rs.next();
            long count = rs.getLong(1);
            if (count == 0) {
                return new DeadLetters.Parked(0, null);
            }
            return new DeadLetters.Parked(count, nonNegative(Duration.between(times.at(rs, 2), times.at(rs, 3))));
        }
    }

    private static Duration nonNegative(Duration d) {
        return d.isNegative() ? Duration.ZERO : d;
    }
}
