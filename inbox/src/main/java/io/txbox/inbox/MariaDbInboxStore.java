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
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * The inbox table on MariaDB 10.6+ and MySQL 8.0+: the statements of {@link MariaDbInboxSql},
 * bound per call.
 *
 * <p><b>Which transaction may store a result.</b> PostgreSQL compares the row's
 * {@code received_txid} with {@code txid_current()}; SQL on MariaDB and MySQL has no cheap
 * transaction id (InnoDB's needs the PROCESS privilege), and nothing else a statement leaves
 * behind ends with the transaction. So a receive that reports FIRST writes a random 64-bit token
 * into the row and has a savepoint named after it ({@code txbox_<token>}): on MariaDB the receive
 * sets it in the upsert's own round trip, whatever the upsert finds ({@link MariaDbInboxSql});
 * on MySQL, which lacks that statement form, a second round trip sets it after a FIRST.
 * Savepoints belong to one transaction: they end with its commit or rollback, and with a rollback
 * to an earlier savepoint, which also undoes the receive. {@link #storeResult} reads the row's
 * token and stores only if this transaction still has that savepoint: never in a later
 * transaction, nor after a receive that reported DUPLICATE (which leaves another call's token in
 * the row). Checking the savepoint releases it and sets it again, which also releases savepoints
 * the caller set after the receive.
 */
final class MariaDbInboxStore extends JdbcInboxStore {
    /** ER_SP_DOES_NOT_EXIST: no savepoint of that name in this transaction. */
    private static final int NO_SUCH_SAVEPOINT = 1305;

    private final MariaDbInboxSql sql;

    MariaDbInboxStore(TxboxTables tables, Dialect dialect, int maxAttempts, long leaseMicros, int purgeBatchSize,
            String what) {
        this(new MariaDbInboxSql(tables, dialect, maxAttempts, leaseMicros, purgeBatchSize), purgeBatchSize, what);
    }

    MariaDbInboxStore(MariaDbInboxSql sql, int purgeBatchSize, String what) {
        super(sql.shared, purgeBatchSize, what);
        this.sql = sql;
    }

    @Override
    public <T> T receive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return upsert(tx, s, fp, sql.receive, null, answers, (token, e) -> {
            if (!sql.returning) { // MariaDB's receive set it already
                try (Statement st = tx.createStatement()) {
                    st.execute("SAVEPOINT " + savepoint(token));
                }
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

    /** One upsert returning the row on MariaDB; on MySQL a write, then a locking read of the row it wrote. */
    @Override
    public boolean writesInOneStatement(Connection c) {
        return sql.returning;
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
     * {@link InboxStore#classify}: write with a fresh token and see the row as the write left it
     * (returned by the upsert on MariaDB, read back locked on MySQL); it was written when the
     * token is there.
     */
    private <T> T upsert(Connection c, Scope s, byte @Nullable [] fp, InboxSql.Stmt upsert, @Nullable String error,
            Answers<T> answers, Taken taken) throws SQLException {
        Read[] seen = new Read[1];
        return InboxStore.classify(s, fp, () -> {
            long token = ThreadLocalRandom.current().nextLong();
            Read r;
            try (PreparedStatement ps = c.prepareStatement(upsert.sql())) {
                int i = 1;
                for (String param : upsert.params()) {
                    if (param.equals("savepoint")) {
                        ps.setString(i++, Long.toUnsignedString(token, 36));
                    } else if (param.equals("consumer")) {
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
                if (sql.returning) {
                    r = read(ps);
                } else {
                    ps.executeUpdate();
                    r = readBack(c, s, token);
                }
            }
            seen[0] = r;
            return r != null && r.mine() ? taken.written(token, r) : null;
        }, () -> seen[0] == null ? null : seen[0].entry(), answers, what(s));
    }

    /** MySQL: the row the upsert wrote or met, read with the lock the upsert took. */
    private @Nullable Read readBack(Connection c, Scope s, long token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.read.sql())) {
            ps.setLong(1, token);
            bindKey(ps, 2, s);
            return read(ps);
        }
    }

    /** The row of {@code ps}'s result ({@link MariaDbInboxSql#read}'s columns), or null if none. */
    private static @Nullable Read read(PreparedStatement ps) throws SQLException {
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

        /** The consumer's own entries and its tenants' ({@code consumer@tenant}). */
            @Override
    void bindLeaseEnd(PreparedStatement ps, int i, Instant leaseEnd) throws SQLException {
        ps.setLong(i, ChronoUnit.MICROS.between(Instant.EPOCH, leaseEnd));
    }

    @Override
    void bindCutoff(PreparedStatement ps, int i, OffsetDateTime cutoff) throws SQLException {
        ps.setBigDecimal(i, epochSeconds(cutoff));
    }

    @Override
    Instant instant(ResultSet rs, int i) throws SQLException {
        return Instant.EPOCH.plus(rs.getLong(i), ChronoUnit.MICROS);
    }

    @Override
    void bindStrings(Connection c, PreparedStatement ps, int i, @Nullable List<String> values) throws SQLException {
        if (values == null) {
            ps.setNull(i, Types.VARCHAR);
        } else {
            ps.setString(i, JsonStrings.encode(values));
        }
    }

    private static BigDecimal epochSeconds(OffsetDateTime t) {
        return BigDecimal.valueOf(ChronoUnit.MICROS.between(Instant.EPOCH, t.toInstant()), 6);
    }

    private static String savepoint(long token) {
        return MariaDbInboxSql.SAVEPOINT + Long.toUnsignedString(token, 36);
    }

    private static String @Nullable [] strings(@Nullable String json) {
        return json == null ? null : JsonStrings.decode(json).toArray(new String[0]);
    }
}
