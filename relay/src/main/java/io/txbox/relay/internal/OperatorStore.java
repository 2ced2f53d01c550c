package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.relay.DeadLetters;
import io.txbox.relay.RelayAdmin;
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
 * Every statement of the operators' calls ({@link RelayAdmin#status()} and {@link DeadLetters}),
 * behind one seam beside {@link RelayStore}: the status figures, and listing, retrying, purging
 * and counting dead letters. Implementations render their statements once, when built (so the
 * configured schema and prefix apply), and only bind them per call. {@link PostgresOperatorStore}
 * is the PostgreSQL implementation, {@link MariaDbOperatorStore} the one for MariaDB and MySQL.
 *
 * <p>Each method runs one statement (status: its reads) on the caller's connection and never
 * commits: the caller chooses the transaction. Retries and purges take at most {@link
 * DeadLetters#BATCH} rows per call.
 */
public interface OperatorStore {
    /** The store for {@code tables} on {@code dialect}'s database. */
    static OperatorStore of(TxboxTables tables, Dialect dialect) {
        return dialect.isMysqlFamily() ? new MariaDbOperatorStore(tables, dialect) : new PostgresOperatorStore(tables);
    }

    /** The outbox backlog, its dead letters, live relay members and owned lanes, by the database clock. */
    RelayAdmin.Status status(Connection c) throws SQLException;

    /** The newest {@code limit} dead letters of {@code destination} (all when null), newest first. */
    List<DeadLetters.DeadLetter> listDead(Connection c, int limit, @Nullable String destination, boolean withPayload)
            throws SQLException;

    /** Moves dead letter {@code id} back to the outbox. */
    Moved retryDead(Connection c, long id) throws SQLException;

    /** Moves the next batch of dead letters of {@code destination} (all when null) with ids above {@code afterId}. */
    Moved retryDeadAfter(Connection c, long afterId, @Nullable String destination) throws SQLException;

    /**
     * What a move back to the outbox did.
     *
     * @param taken dead rows it took (and deleted)
     * @param requeued of those, rows inserted into the outbox; the others were pending there already
     * @param lastId the highest id taken, 0 when none
     */
    record Moved(int taken, int requeued, long lastId) {}

    /** Deletes up to one batch of dead letters that died more than {@code ageMillis} ago; returns how many. */
    int purgeDead(Connection c, long ageMillis) throws SQLException;

    /** Dead letters that died more than {@code ageMillis} ago. */
    long countDeadOlder(Connection c, long ageMillis) throws SQLException;

    /** Number of dead letters. */
    long countDead(Connection c) throws SQLException;

    /** The statements on parked keys; {@link #retryDead}, {@link #retryDeadAfter} and {@link #purgeDead} keep them in step. */
    ParkedKeys parkedKeys();

    /** A value of the current row, null where the database returned none: each database returns times its own way. */
    @FunctionalInterface
    interface Reader<T> {
        @Nullable T read(ResultSet rs) throws SQLException;
    }

    /**
     * Runs the status statements both stores render: {@code outbox} (rows, ready rows, then the
     * oldest row's age, which {@code oldestAge} reads), {@code dead} (dead letters, then the
     * oldest one's death, which {@code oldestDead} reads), {@code members} and {@code lanes} (one
     * number each).
     */
    static RelayAdmin.Status status(Connection c, String outbox, String dead, String members, String lanes,
            Reader<Duration> oldestAge, Reader<Instant> oldestDead) throws SQLException {
        long rows;
        long ready;
        Duration age;
        try (PreparedStatement ps = c.prepareStatement(outbox); ResultSet rs = ps.executeQuery()) {
            rs.next();
            rows = rs.getLong(1);
            ready = rs.getLong(2);
            age = oldestAge.read(rs);
        }
        long deadRows;
        Instant diedFirst;
        try (PreparedStatement ps = c.prepareStatement(dead); ResultSet rs = ps.executeQuery()) {
            rs.next();
            deadRows = rs.getLong(1);
            diedFirst = oldestDead.read(rs);
        }
        return new RelayAdmin.Status(rows, ready, age, deadRows, diedFirst, single(c, members), single(c, lanes));
    }

    /** The single number {@code sql} returns, given {@code params} in order. */
    static long single(Connection c, String sql, long... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setLong(i + 1, params[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Moves the dead letters the executed statement {@code pick} selects back to the outbox. */
    @FunctionalInterface
    interface Mover {
        Moved move(Connection c, PreparedStatement pick) throws SQLException;
    }

    /** {@link #retryDead}: {@code mover} on {@code sql}, the pick both stores bind with the id alone. */
    static Moved retryOne(Connection c, String sql, long id, Mover mover) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, id);
            return mover.move(c, ps);
        }
    }

    /**
     * {@link #retryDeadAfter}: {@code mover} on {@code sql}, the pick both stores bind with the id
     * to start above and the destination twice (null for all).
     */
    static Moved retryAfter(Connection c, String sql, long afterId, @Nullable String destination, Mover mover)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, afterId);
            ps.setString(2, destination);
            ps.setString(3, destination);
            return mover.move(c, ps);
        }
    }

    /**
     * Runs the purge {@code sql}, whose one parameter is the age in the database's unit, and
     * releases the routing keys the purged rows parked; returns how many rows it deleted.
     */
    static int purge(Connection c, String sql, long age, ParkedKeys parked) throws SQLException {
        int n;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, age);
            n = ps.executeUpdate();
        }
        if (n > 0) {
            parked.releasePurged(c);
        }
        return n;
    }

    /** Column {@code column} of the current row as an instant: each database returns times its own way. */
    @FunctionalInterface
    interface Times {
        Instant at(ResultSet rs, int column) throws SQLException;
    }

    /**
     * Runs {@code sql}, the listing both stores render with the same parameters (with payload,
     * destination twice, limit) and columns (id, step key, destination, routing key, attempts,
     * reason, created, died, payload).
     */
    static List<DeadLetters.DeadLetter> listDead(Connection c, String sql, int limit, @Nullable String destination,
            boolean withPayload, Times times) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setBoolean(1, withPayload);
            ps.setString(2, destination);
            ps.setString(3, destination);
            ps.setInt(4, limit);
            List<DeadLetters.DeadLetter> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new DeadLetters.DeadLetter(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getInt(5), rs.getString(6), times.at(rs, 7), times.at(rs, 8), rs.getBytes(9)));
                }
            }
            return out;
        }
    }
}
