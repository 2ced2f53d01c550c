package io.txbox.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * txbox's inbox receive sent by hand: the statement text captured from txbox ({@link SqlRecorder}),
 * bound with the values txbox binds, so a by-hand side runs the same query and the difference is
 * what txbox does around it. PostgreSQL binds consumer, key and fingerprint, and the statement
 * returns a row when it wrote the entry. MariaDB's receive is an anonymous block that sets a
 * savepoint named after a random token and upserts with that token; it returns the row, whose
 * first column says whether the token is this call's. The one home of those binds, for every
 * scenario that replays the receive.
 */
final class InboxReplay {
    /** The values txbox's receive binds on MariaDB (see {@link #bind}). */
    private static final int MARIADB_RECEIVE_BINDS = 13;

    /** The receive statement as txbox prepares it. */
    final String sql;
    /**
     * The previous transaction's commit and the receive in one round trip, as txbox's chained
     * consumer sends it (PostgreSQL's {@code COMMIT; BEGIN; ...}); {@code null} where txbox commits
     * apart (MariaDB).
     */
    final String chainedSql;
    private final boolean mariadb;

    private InboxReplay(String sql, String chainedSql, boolean mariadb) {
        this.sql = sql;
        this.chainedSql = chainedSql;
        this.mariadb = mariadb;
        if (mariadb && parameters(sql) != MARIADB_RECEIVE_BINDS) {
            throw new IllegalStateException("the by-hand replay binds " + MARIADB_RECEIVE_BINDS + " values, but txbox's"
                    + " receive takes " + parameters(sql) + ": " + sql);
        }
    }

    /** The receive among the statements txbox {@code prepared} (the first on the inbox table). */
    static InboxReplay of(BenchEnv env, List<String> prepared) {
        List<String> inbox = inboxStatements(env, prepared);
        if (inbox.isEmpty()) {
            throw new IllegalStateException("txbox prepared no inbox statement: " + prepared);
        }
        return new InboxReplay(inbox.get(0), null, env.mariadb);
    }

    /**
     * The receive and, where txbox sends the commit with it, the chained receive, from what txbox
     * {@code prepared} for two messages run through {@code Inbox.processChained}: the second inbox
     * statement is the chained one when it differs from the first.
     */
    static InboxReplay ofChain(BenchEnv env, List<String> prepared) {
        List<String> inbox = inboxStatements(env, prepared);
        if (inbox.size() < 2) {
            throw new IllegalStateException("txbox's chain of two prepared " + inbox.size() + " inbox statement(s): "
                    + prepared);
        }
        String first = inbox.get(0);
        String second = inbox.get(1);
        return new InboxReplay(first, second.equals(first) ? null : second, env.mariadb);
    }

    private static List<String> inboxStatements(BenchEnv env, List<String> prepared) {
        return prepared.stream().filter(s -> s.contains(env.tables.inboxTable())).toList();
    }

    /** Whether txbox sends each commit with the next receive on this database. */
    boolean chainsCommits() {
        return chainedSql != null;
    }

    /** Receives {@code key} in {@code c}'s transaction; whether it wrote the entry (FIRST). */
    boolean receive(Connection c, String consumer, String key, byte[] fingerprint) throws SQLException {
        return run(c, sql, consumer, key, fingerprint);
    }

    /** Commits {@code c}'s transaction and receives {@code key} in the next, in one round trip. */
    boolean commitAndReceive(Connection c, String consumer, String key, byte[] fingerprint) throws SQLException {
        if (chainedSql == null) {
            throw new IllegalStateException("txbox commits apart on this database");
        }
        return run(c, chainedSql, consumer, key, fingerprint);
    }

    private boolean run(Connection c, String text, String consumer, String key, byte[] fingerprint)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(text)) {
            bind(ps, consumer, key, fingerprint);
            // The receive's rows are the last result; a chained COMMIT and BEGIN come first, without any.
            boolean rows = ps.execute();
            while (!rows && ps.getUpdateCount() != -1) {
                rows = ps.getMoreResults();
            }
            try (ResultSet rs = ps.getResultSet()) {
                return rs != null && rs.next() && (!mariadb || rs.getBoolean(1));
            }
        }
    }

    private void bind(PreparedStatement ps, String consumer, String key, byte[] fp) throws SQLException {
        if (!mariadb) {
            ps.setString(1, consumer);
            ps.setString(2, key);
            ps.setBytes(3, fp);
            return;
        }
        long token = ThreadLocalRandom.current().nextLong();
        // savepoint, consumer, key, fingerprint, token; fingerprint x 2, token x 5 (update); token (RETURNING)
        ps.setString(1, Long.toUnsignedString(token, 36));
        ps.setString(2, consumer);
        ps.setString(3, key);
        ps.setBytes(4, fp);
        ps.setLong(5, token);
        ps.setBytes(6, fp);
        ps.setBytes(7, fp);
        for (int i = 8; i <= MARIADB_RECEIVE_BINDS; i++) {
            ps.setLong(i, token);
        }
    }

    /** The {@code ?} markers of {@code sql}. */
    static int parameters(String sql) {
        return (int) sql.chars().filter(ch -> ch == '?').count();
    }
}
