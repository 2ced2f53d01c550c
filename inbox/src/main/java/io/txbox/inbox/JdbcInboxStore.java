package io.txbox.inbox;

import io.txbox.inbox.InboxSql.Stmt;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the inbox stores of every database share: the operator statements and the fenced
 * writes, bound by position in one way. A store says only how its database takes and gives
 * times and lists of strings ({@link #bindLeaseEnd}, {@link #bindCutoff}, {@link #instant},
 * {@link #bindStrings}).
 */
abstract class JdbcInboxStore implements InboxStore {
    /**
     * The statements bound here, in these bind orders. complete: result, resultStatus, header
     * names, header values, then the fence (consumer, key, attempt, lease end); release: the
     * fence; resetDead: consumer, key; listDead: the consumer (name, prefix length, prefix),
     * limit; purge: cutoff, the consumer; completedByConsumer: cutoff; countDead: none.
     */
    record Shared(Stmt complete, Stmt release, Stmt resetDead, Stmt listDead, Stmt purge, Stmt completedByConsumer,
            Stmt countDead) {}

    private final Shared shared;
    private final int purgeBatchSize;
    private final String what;

    JdbcInboxStore(Shared shared, int purgeBatchSize, String what) {
        this.shared = shared;
        this.purgeBatchSize = purgeBatchSize;
        this.what = what;
    }

    /** Binds the lease end a claim's fence compares with. */
    abstract void bindLeaseEnd(PreparedStatement ps, int i, Instant leaseEnd) throws SQLException;

    /** Binds a retention cutoff. */
    abstract void bindCutoff(PreparedStatement ps, int i, OffsetDateTime cutoff) throws SQLException;

    /** Reads a time column as the statement returns it. */
    abstract Instant instant(ResultSet rs, int i) throws SQLException;

    /** Binds a list of strings (header names or values), or null. */
    abstract void bindStrings(Connection c, PreparedStatement ps, int i, @Nullable List<String> values)
            throws SQLException;

    @Override
    public boolean complete(Connection c, Scope s, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(shared.complete().sql())) {
            ps.setBytes(1, result);
            if (resultStatus == null) {
                ps.setNull(2, Types.INTEGER);
            } else {
                ps.setInt(2, resultStatus);
            }
            List<String> names = null;
            List<String> values = null;
            if (headers != null && !headers.isEmpty()) {
                names = new ArrayList<>();
                values = new ArrayList<>();
                for (Map.Entry<String, List<String>> h : headers.entrySet()) {
                    for (String v : h.getValue()) {
                        names.add(h.getKey());
                        values.add(v);
                    }
                }
            }
            bindStrings(c, ps, 3, names);
            bindStrings(c, ps, 4, values);
            bindFence(ps, 5, s, claim);
            return ps.executeUpdate() > 0;
        }
    }

    @Override
    public boolean release(Connection c, Scope s, Claim claim) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(shared.release().sql())) {
            bindFence(ps, 1, s, claim);
            return ps.executeUpdate() > 0;
        }
    }

    @Override
    public boolean resetDead(Connection c, Scope s) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(shared.resetDead().sql())) {
            bindKey(ps, 1, s);
            return ps.executeUpdate() > 0;
        }
    }

    @Override
    public List<DeadEntry> listDead(Connection c, String consumer, int limit) throws SQLException {
        String tenantPrefix = consumer + "@";
        try (PreparedStatement ps = c.prepareStatement(shared.listDead().sql())) {
            bindConsumer(ps, 1, consumer);
            ps.setInt(4, limit);
            List<DeadEntry> dead = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String column = rs.getString(1);
                    String tenant = column.equals(consumer) ? null : column.substring(tenantPrefix.length());
                    dead.add(new DeadEntry(rs.getString(2), tenant, rs.getInt(3), rs.getString(4), instant(rs, 5)));
                }
            }
            return List.copyOf(dead);
        }
    }

    @Override
    public int purgeBatch(Connection c, String consumer, OffsetDateTime cutoff) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(shared.purge().sql())) {
            bindCutoff(ps, 1, cutoff);
            bindConsumer(ps, 2, consumer);
            return ps.executeUpdate();
        }
    }

    @Override
    public Map<String, Long> completedByConsumer(Connection c, OffsetDateTime cutoff) throws SQLException {
        Map<String, Long> counts = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(shared.completedByConsumer().sql())) {
            bindCutoff(ps, 1, cutoff);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return counts;
    }

    @Override
    public long countDead(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(shared.countDead().sql()); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    public int purgeBatchSize() {
        return purgeBatchSize;
    }

    static void bindKey(PreparedStatement ps, int from, Scope s) throws SQLException {
        ps.setString(from, s.column());
        ps.setString(from + 1, s.key());
    }

    /** The consumer's own entries and its tenants' ({@code consumer@tenant}). */
    static void bindConsumer(PreparedStatement ps, int from, String consumer) throws SQLException {
        ps.setString(from, consumer);
        ps.setInt(from + 1, consumer.length() + 1);
        ps.setString(from + 2, consumer + "@");
    }

    /** Consumer, key, attempt (the fencing token) and lease end of a held claim. */
    void bindFence(PreparedStatement ps, int from, Scope s, Claim claim) throws SQLException {
        bindKey(ps, from, s);
        ps.setInt(from + 2, claim.fencingToken());
        bindLeaseEnd(ps, from + 3, Objects.requireNonNull(claim.leaseUntil(), "an acquired claim has a lease end"));
    }

    String what(Scope s) {
        return what + " key " + s.label();
    }
}
