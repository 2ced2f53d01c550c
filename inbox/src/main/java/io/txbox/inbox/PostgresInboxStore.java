package io.txbox.inbox;

import io.txbox.TxboxTables;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/** The inbox table on PostgreSQL: the statements of {@link InboxSql}, bound per call. */
final class PostgresInboxStore implements InboxStore {
    private final InboxSql sql;
    private final int purgeBatchSize;
    private final String what;

    PostgresInboxStore(TxboxTables tables, int maxAttempts, long leaseMicros, int purgeBatchSize, String what) {
        this.sql = new InboxSql(tables, maxAttempts, leaseMicros, purgeBatchSize);
        this.purgeBatchSize = purgeBatchSize;
        this.what = what;
    }

    @Override
    public <T> T receive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return InboxStore.classify(s, fp, () -> {
            try (PreparedStatement ps = tx.prepareStatement(sql.receive.sql())) {
                bindKey(ps, 1, s);
                ps.setBytes(3, fp);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? new Written(COMPLETED, rs.getInt(1), 0, null, null) : null;
                }
            }
        }, () -> read(tx, s), answers, what(s));
    }

    @Override
    public int storeResult(Connection tx, Scope s, byte[] result) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql.storeResult.sql())) {
            ps.setBytes(1, result);
            bindKey(ps, 2, s);
            return ps.executeUpdate();
        }
    }

    @Override
    public <T> T recordFailure(Connection c, Scope s, byte @Nullable [] fp, String error, Answers<T> answers)
            throws SQLException {
        return InboxStore.classify(s, fp, () -> {
            try (PreparedStatement ps = c.prepareStatement(sql.recordFailure.sql())) {
                bindKey(ps, 1, s);
                ps.setBytes(3, fp);
                ps.setString(4, error);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? new Written(rs.getString(1), rs.getInt(2), rs.getInt(3), null, error) : null;
                }
            }
        }, () -> read(c, s), answers, what(s));
    }

    @Override
    public <T> T claim(Connection c, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return InboxStore.classify(s, fp, () -> {
            try (PreparedStatement ps = c.prepareStatement(sql.claim.sql())) {
                bindKey(ps, 1, s);
                ps.setBytes(3, fp);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return null;
                    }
                    OffsetDateTime until = rs.getObject(3, OffsetDateTime.class);
                    return new Written(rs.getString(1), rs.getInt(2), 0, until == null ? null : until.toInstant(),
                            rs.getString(4));
                }
            }
        }, () -> read(c, s), answers, what(s));
    }

    @Override
    public boolean complete(Connection c, Scope s, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.complete.sql())) {
            ps.setBytes(1, result);
            if (resultStatus == null) {
                ps.setNull(2, Types.INTEGER);
            } else {
                ps.setInt(2, resultStatus);
            }
            if (headers == null || headers.isEmpty()) {
                ps.setNull(3, Types.ARRAY);
                ps.setNull(4, Types.ARRAY);
            } else {
                List<String> names = new ArrayList<>();
                List<String> values = new ArrayList<>();
                headers.forEach((name, vs) -> vs.forEach(v -> {
                    names.add(name);
                    values.add(v);
                }));
                ps.setArray(3, textArray(c, names));
                ps.setArray(4, textArray(c, values));
            }
            bindFence(ps, 5, s, claim);
            return ps.executeUpdate() > 0;
        }
    }

    @Override
    public @Nullable Written fail(Connection c, Scope s, Claim claim, String error) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.fail.sql())) {
            ps.setString(1, error);
            bindFence(ps, 2, s, claim);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new Written(rs.getString(1), rs.getInt(2), rs.getInt(3), null, error) : null;
            }
        }
    }

    @Override
    public boolean release(Connection c, Scope s, Claim claim) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.release.sql())) {
            bindFence(ps, 1, s, claim);
            return ps.executeUpdate() > 0;
        }
    }

    @Override
    public boolean resetDead(Connection c, Scope s) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.resetDead.sql())) {
            bindKey(ps, 1, s);
            return ps.executeUpdate() > 0;
        }
    }

    @Override
    public List<DeadEntry> listDead(Connection c, String consumer, int limit) throws SQLException {
        String tenantPrefix = consumer + "@";
        try (PreparedStatement ps = c.prepareStatement(sql.listDead.sql())) {
            bindConsumer(ps, 1, consumer);
            ps.setInt(4, limit);
            List<DeadEntry> dead = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String column = rs.getString(1);
                    String tenant = column.equals(consumer) ? null : column.substring(tenantPrefix.length());
                    dead.add(new DeadEntry(rs.getString(2), tenant, rs.getInt(3), rs.getString(4),
                            rs.getObject(5, OffsetDateTime.class).toInstant()));
                }
            }
            return List.copyOf(dead);
        }
    }

    @Override
    public int purgeBatch(Connection c, String consumer, OffsetDateTime cutoff) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.purge.sql())) {
            ps.setObject(1, cutoff);
            bindConsumer(ps, 2, consumer);
            return ps.executeUpdate();
        }
    }

    @Override
    public Map<String, Long> completedByConsumer(Connection c, OffsetDateTime cutoff) throws SQLException {
        Map<String, Long> counts = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql.completedByConsumer.sql())) {
            ps.setObject(1, cutoff);
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
        try (PreparedStatement ps = c.prepareStatement(sql.countDead.sql()); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    public int purgeBatchSize() {
        return purgeBatchSize;
    }

    private @Nullable Entry read(Connection c, Scope s) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.read.sql())) {
            bindKey(ps, 1, s);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                int rstatus = rs.getInt(4);
                Integer resultStatus = rs.wasNull() ? null : rstatus;
                return new Entry(rs.getString(1), rs.getBytes(2), rs.getBytes(3), resultStatus,
                        strings(rs.getArray(5)), strings(rs.getArray(6)), rs.getInt(7), rs.getString(8),
                        rs.getBoolean(9));
            }
        }
    }

    private static void bindKey(PreparedStatement ps, int from, Scope s) throws SQLException {
        ps.setString(from, s.column());
        ps.setString(from + 1, s.key());
    }

    /** The consumer's own entries and its tenants' ({@code consumer@tenant}). */
    private static void bindConsumer(PreparedStatement ps, int from, String consumer) throws SQLException {
        ps.setString(from, consumer);
        ps.setInt(from + 1, consumer.length() + 1);
        ps.setString(from + 2, consumer + "@");
    }

    private static void bindFence(PreparedStatement ps, int from, Scope s, Claim claim) throws SQLException {
        bindKey(ps, from, s);
        ps.setInt(from + 2, claim.fencingToken());
        Instant until = Objects.requireNonNull(claim.leaseUntil(), "an acquired claim has a lease end");
        ps.setObject(from + 3, OffsetDateTime.ofInstant(until, ZoneOffset.UTC));
    }

    private static Array textArray(Connection c, List<String> values) throws SQLException {
        return c.createArrayOf("text", values.toArray(new String[0]));
    }

    private static String @Nullable [] strings(@Nullable Array array) throws SQLException {
        return array == null ? null : (String[]) array.getArray();
    }

    private String what(Scope s) {
        return what + " key " + s.label();
    }
}
