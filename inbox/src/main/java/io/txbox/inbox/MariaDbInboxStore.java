package io.txbox.inbox;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.JsonStrings;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * The inbox table on MariaDB 10.6+ and MySQL 8.0+: the statements of {@link MariaDbInboxSql},
 * bound per call.
 *
 * <p><b>Which transaction may store a result.</b> PostgreSQL compares the row's
 * {@code received_txid} with {@code txid_current()}; SQL on MariaDB and MySQL has no cheap
 * transaction id (InnoDB's needs the PROCESS privilege). So a receive that reports FIRST writes a
 * random 64-bit token into the row and sets a savepoint named after it ({@code txbox_<token>}).
 * Savepoints belong to one transaction: they end with its commit or rollback, and with a rollback
 * to an earlier savepoint, which also undoes the receive. {@link #storeResult} reads the row's
 * token and stores only if this transaction still has that savepoint: never in a later
 * transaction, nor after a receive that reported DUPLICATE (which leaves another call's token in
 * the row). Checking the savepoint releases it and sets it again, which also releases savepoints
 * the caller set after the receive.
 */
final class MariaDbInboxStore implements InboxStore {
    /** ER_SP_DOES_NOT_EXIST: no savepoint of that name in this transaction. */
    private static final int NO_SUCH_SAVEPOINT = 1305;

    private final MariaDbInboxSql sql;
    private final int purgeBatchSize;
    private final String what;

    MariaDbInboxStore(TxboxTables tables, Dialect dialect, int maxAttempts, long leaseMicros, int purgeBatchSize,
            String what) {
        this.sql = new MariaDbInboxSql(tables, dialect, maxAttempts, leaseMicros, purgeBatchSize);
        this.purgeBatchSize = purgeBatchSize;
        this.what = what;
    }

    @Override
    public <T> T receive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return upsert(tx, s, fp, sql.receive, null, answers, (token, e) -> {
            try (Statement st = tx.createStatement()) {
                st.execute("SAVEPOINT " + savepoint(token));
            }
            return new Written(COMPLETED, e.attempts(), 0, null, null);
        });
    }

    @Override
    public int storeResult(Connection tx, Scope s, byte[] result) throws SQLException {
        long token;
        try (PreparedStatement ps = tx.prepareStatement(sql.receivedToken.sql())) {
            bindKey(ps, 1, s);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return 0;
                }
                token = rs.getLong(1);
                if (rs.wasNull()) {
                    return 0;
                }
            }
        }
        try (Statement st = tx.createStatement()) {
            st.execute("RELEASE SAVEPOINT " + savepoint(token));
            st.execute("SAVEPOINT " + savepoint(token));
        } catch (SQLException e) {
            if (e.getErrorCode() == NO_SUCH_SAVEPOINT) {
                return 0;
            }
            throw e;
        }
        try (PreparedStatement ps = tx.prepareStatement(sql.storeResult.sql())) {
            ps.setBytes(1, result);
            bindKey(ps, 2, s);
            ps.setLong(4, token);
            return ps.executeUpdate();
        }
    }

    @Override
    public <T> T recordFailure(Connection c, Scope s, byte @Nullable [] fp, String error, Answers<T> answers)
            throws SQLException {
        return upsert(c, s, fp, sql.recordFailure, error, answers,
                (token, e) -> new Written(e.status(), e.attempts(), e.failures(), null, error));
    }

    @Override
    public <T> T claim(Connection c, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return upsert(c, s, fp, sql.claim, null, answers, (token, e) -> new Written(e.status(), e.attempts(),
                e.failures(), e.leaseMicros() == null ? null : Instant.EPOCH.plus(e.leaseMicros(), ChronoUnit.MICROS),
                e.entry().lastError()));
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
                ps.setNull(3, Types.VARCHAR);
                ps.setNull(4, Types.VARCHAR);
            } else {
                List<String> names = new ArrayList<>();
                List<String> values = new ArrayList<>();
                headers.forEach((name, vs) -> vs.forEach(v -> {
                    names.add(name);
                    values.add(v);
                }));
                ps.setString(3, JsonStrings.encode(names));
                ps.setString(4, JsonStrings.encode(values));
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
            if (ps.executeUpdate() == 0) {
                return null;
            }
        }
        // The update holds the row's lock, so this read sees what it wrote.
        try (PreparedStatement ps = c.prepareStatement(sql.failed.sql())) {
            bindKey(ps, 1, s);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Written(rs.getString(1), rs.getInt(2), rs.getInt(3), null, error);
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
                            Instant.EPOCH.plus(rs.getLong(5), ChronoUnit.MICROS)));
                }
            }
            return List.copyOf(dead);
        }
    }

    @Override
    public int purgeBatch(Connection c, String consumer, OffsetDateTime cutoff) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.purge.sql())) {
            ps.setBigDecimal(1, epochSeconds(cutoff));
            bindConsumer(ps, 2, consumer);
            return ps.executeUpdate();
        }
    }

    @Override
    public Map<String, Long> completedByConsumer(Connection c, OffsetDateTime cutoff) throws SQLException {
        Map<String, Long> counts = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql.completedByConsumer.sql())) {
            ps.setBigDecimal(1, epochSeconds(cutoff));
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

    /** The entry as {@link MariaDbInboxSql#read} sees it, with what only the writes need. */
    private record Read(Entry entry, boolean mine, int failures, @Nullable Long leaseMicros) {
        String status() {
            return entry.status();
        }

        int attempts() {
            return entry.attempts();
        }
    }

    /** What a write that took the entry makes of it. */
    @FunctionalInterface
    private interface Taken {
        Written written(long token, Read r) throws SQLException;
    }

    /**
     * One upsert of {@link MariaDbInboxSql} (receive, recordFailure or claim) through
     * {@link InboxStore#classify}: write with a fresh token, read the row back locked, and report
     * it as written when the token is there.
     */
    private <T> T upsert(Connection c, Scope s, byte @Nullable [] fp, InboxSql.Stmt upsert, @Nullable String error,
            Answers<T> answers, Taken taken) throws SQLException {
        Read[] seen = new Read[1];
        return InboxStore.classify(s, fp, () -> {
            long token = ThreadLocalRandom.current().nextLong();
            try (PreparedStatement ps = c.prepareStatement(upsert.sql())) {
                int i = 1;
                for (String param : upsert.params()) {
                    if (param.equals("consumer")) {
                        ps.setString(i++, s.column());
                    } else if (param.equals("key")) {
                        ps.setString(i++, s.key());
                    } else if (param.startsWith("fingerprint")) {
                        ps.setBytes(i++, fp);
                    } else if (param.startsWith("token")) {
                        ps.setLong(i++, token);
                    } else {
                        ps.setString(i++, Objects.requireNonNull(error, param));
                    }
                }
                ps.executeUpdate();
            }
            Read r = read(c, s, token);
            seen[0] = r;
            return r != null && r.mine() ? taken.written(token, r) : null;
        }, () -> seen[0] == null ? null : seen[0].entry(), answers, what + " key " + s.label());
    }

    private @Nullable Read read(Connection c, Scope s, long token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.read.sql())) {
            ps.setLong(1, token);
            bindKey(ps, 2, s);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                boolean mine = rs.getBoolean(1);
                int rstatus = rs.getInt(5);
                Integer resultStatus = rs.wasNull() ? null : rstatus;
                long micros = rs.getLong(12);
                Long leaseMicros = rs.wasNull() ? null : micros;
                Entry e = new Entry(rs.getString(2), rs.getBytes(3), rs.getBytes(4), resultStatus,
                        strings(rs.getString(6)), strings(rs.getString(7)), rs.getInt(8), rs.getString(10),
                        rs.getBoolean(11));
                return new Read(e, mine, rs.getInt(9), leaseMicros);
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
        ps.setLong(from + 3, ChronoUnit.MICROS.between(Instant.EPOCH, until));
    }

    private static BigDecimal epochSeconds(OffsetDateTime t) {
        return BigDecimal.valueOf(ChronoUnit.MICROS.between(Instant.EPOCH, t.toInstant()), 6);
    }

    private static String savepoint(long token) {
        return "txbox_" + Long.toUnsignedString(token, 36);
    }

    private static String @Nullable [] strings(@Nullable String json) {
        return json == null ? null : JsonStrings.decode(json).toArray(new String[0]);
    }
}
