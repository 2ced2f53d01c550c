package io.txbox.inbox;

import io.txbox.TxboxTables;
import io.txbox.inbox.InboxSql.Stmt;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** The inbox table on PostgreSQL: the statements of {@link InboxSql}, bound per call. */
final class PostgresInboxStore extends JdbcInboxStore {
    private final InboxSql sql;

    PostgresInboxStore(TxboxTables tables, int maxAttempts, long leaseMicros, int purgeBatchSize, String what) {
        this(new InboxSql(tables, maxAttempts, leaseMicros, purgeBatchSize), purgeBatchSize, what);
    }

    private PostgresInboxStore(InboxSql sql, int purgeBatchSize, String what) {
        super(sql.shared, purgeBatchSize, what);
        this.sql = sql;
    }

    @Override
    public <T> T receive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return InboxStore.classify(s, fp, () -> write(tx, sql.receive, s, fp), () -> read(tx, s), answers, what(s));
    }

    /**
     * One round trip for all of them ({@link InboxSql#receiveAll}): it writes each entry that
     * receive would write at once (new, or one it may take over). An entry the statement left
     * alone, and an entry named again later in the list, goes through {@link #receive} in its
     * turn, which meets the row as the statement left it (locked by this transaction) and
     * classifies it as a single receive would.
     */
    @Override
    public <T> List<T> receiveAll(Connection tx, List<Scope> scopes, List<byte @Nullable []> fps,
            List<Answers<T>> answers) throws SQLException {
        int n = scopes.size();
        if (n < 2) {
            return super.receiveAll(tx, scopes, fps, answers);
        }
        Set<List<String>> entries = new HashSet<>();
        List<String> consumers = new ArrayList<>(n);
        List<String> keys = new ArrayList<>(n);
        List<byte[]> fingerprints = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Scope s = scopes.get(i);
            if (entries.add(List.of(s.column(), s.key()))) {
                consumers.add(s.column());
                keys.add(s.key());
                fingerprints.add(fps.get(i));
            }
        }
        Map<List<String>, Written> written = new HashMap<>();
        try (PreparedStatement ps = tx.prepareStatement(sql.receiveAll.sql())) {
            ps.setArray(1, textArray(tx, consumers));
            ps.setArray(2, textArray(tx, keys));
            ps.setArray(3, tx.createArrayOf("bytea", fingerprints.toArray(new byte[0][])));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    written.put(List.of(rs.getString(1), rs.getString(2)), new Written(COMPLETED, rs.getInt(3), 0,
                            null, null));
                }
            }
        }
        List<T> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Scope s = scopes.get(i);
            // remove: only the entry's first appearance was written by the statement
            Written w = written.remove(List.of(s.column(), s.key()));
            out.add(w != null ? answers.get(i).written(w) : receive(tx, s, fps.get(i), answers.get(i)));
        }
        return out;
    }

    /**
     * One round trip: {@code COMMIT; BEGIN;} and receive's insert. Only the first write of
     * {@link InboxStore#classify} carries the commit; a retry after a racing change runs in the
     * transaction the first one began.
     */
    @Override
    public <T> T commitAndReceive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers)
            throws SQLException {
        boolean[] committed = {false};
        try {
            return InboxStore.classify(s, fp, () -> {
                if (committed[0]) {
                    return write(tx, sql.receive, s, fp);
                }
                Written w = write(tx, sql.commitAndReceive, s, fp);
                committed[0] = true;
                return w;
            }, () -> read(tx, s), answers, what(s));
        } catch (SQLException | RuntimeException e) {
            if (committed[0] || inAbortedTransaction(tx)) {
                throw new AfterCommit(e);
            }
            throw e;
        }
    }

    /** Receive's insert (after a commit, for {@code commitAndReceive}); what it wrote, or null. */
    private static @Nullable Written write(Connection tx, Stmt stmt, Scope s, byte @Nullable [] fp)
            throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(stmt.sql())) {
            bindKey(ps, 1, s);
            ps.setBytes(3, fp);
            // The insert's rows are the last result; COMMIT and BEGIN come first, without any.
            boolean rows = ps.execute();
            while (!rows && ps.getUpdateCount() != -1) {
                rows = ps.getMoreResults();
            }
            try (ResultSet rs = ps.getResultSet()) {
                return rs != null && rs.next() ? new Written(COMPLETED, rs.getInt(1), 0, null, null) : null;
            }
        }
    }

    /**
     * Whether a failed {@code COMMIT; BEGIN; INSERT} failed after its commit: then the BEGIN left
     * a transaction the error aborted, which refuses every statement (SQL state 25P02). A failed
     * COMMIT leaves none, as the server skips the rest of the round trip; a lost connection
     * answers with another state, so its commit stays unknown.
     */
    private static boolean inAbortedTransaction(Connection tx) {
        try (Statement st = tx.createStatement()) {
            st.execute("SELECT 1");
            return false;
        } catch (SQLException e) {
            return "25P02".equals(e.getSQLState());
        }
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
    public @Nullable Written fail(Connection c, Scope s, Claim claim, String error) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.fail.sql())) {
            ps.setString(1, error);
            bindFence(ps, 2, s, claim);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new Written(rs.getString(1), rs.getInt(2), rs.getInt(3), null, error) : null;
            }
        }
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

    @Override
    void bindLeaseEnd(PreparedStatement ps, int i, Instant leaseEnd) throws SQLException {
        ps.setObject(i, OffsetDateTime.ofInstant(leaseEnd, ZoneOffset.UTC));
    }

    @Override
    void bindCutoff(PreparedStatement ps, int i, OffsetDateTime cutoff) throws SQLException {
        ps.setObject(i, cutoff);
    }

    @Override
    Instant instant(ResultSet rs, int i) throws SQLException {
        return rs.getObject(i, OffsetDateTime.class).toInstant();
    }

    @Override
    void bindStrings(Connection c, PreparedStatement ps, int i, @Nullable List<String> values) throws SQLException {
        if (values == null) {
            ps.setNull(i, Types.ARRAY);
        } else {
            ps.setArray(i, textArray(c, values));
        }
    }

    private static Array textArray(Connection c, List<String> values) throws SQLException {
        return c.createArrayOf("text", values.toArray(new String[0]));
    }

    private static String @Nullable [] strings(@Nullable Array array) throws SQLException {
        return array == null ? null : (String[]) array.getArray();
    }
}
