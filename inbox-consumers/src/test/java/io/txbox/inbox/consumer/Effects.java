package io.txbox.inbox.consumer;

import io.txbox.inbox.Handler;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * A business table without a unique key, so that a double-applied message shows up as two
 * rows, in a {@link TestDatabase}'s own schema. Shared by the consumer ITs.
 */
public final class Effects {
    private final DataSource ds;
    private final boolean postgres;
    private final String schema;
    private final String table;
    private final String transactions;

    public Effects(TestDatabase db) {
        this.ds = db.dataSource();
        this.postgres = db.kind() == TestDatabase.Kind.POSTGRESQL;
        this.schema = db.schema();
        this.table = db.qualified(db.schema(), "effects");
        execute("create table if not exists " + table
                + " (consumer text not null, message_key text not null, redelivered boolean not null,"
                + " traceparent text, payload " + (postgres ? "bytea" : "longblob") + ")");
        if (!postgres) {
            // transaction-precise system versioning: row_start is the id of the inserting transaction
            transactions = db.qualified(db.schema(), "effect_transactions");
            execute("create table if not exists " + transactions + " (id bigint auto_increment primary key,"
                    + " row_start bigint unsigned generated always as row start invisible,"
                    + " row_end bigint unsigned generated always as row end invisible,"
                    + " period for system_time(row_start, row_end)) with system versioning");
        } else {
            transactions = null;
        }
    }

    /**
     * Makes the COMMIT of {@code consumer}'s row for {@code key} fail its first {@code times}
     * attempts (a deferred constraint trigger, checked at commit). PostgreSQL only: MariaDB
     * checks every constraint and trigger at the statement, none at COMMIT.
     */
    public void refuseCommits(String consumer, String key, int times) {
        if (!postgres) {
            throw new IllegalStateException("a refused COMMIT needs a deferred trigger, which only PostgreSQL has");
        }
        String table = schema + ".effects"; // unquoted: the trigger and its function are named after it
        String name = table + "_refuse_" + consumer.replaceAll("[^A-Za-z0-9]", "_");
        execute("create sequence " + name + "_seq");
        execute("create function " + name + "() returns trigger language plpgsql as $$"
                + " begin if new.consumer = '" + consumer + "' and new.message_key = '" + key + "'"
                + " and nextval('" + name + "_seq') <= " + times + " then"
                + " raise exception 'refused at commit' using errcode = '23514'; end if; return null; end $$");
        execute("create constraint trigger " + name.substring(name.indexOf('.') + 1) + " after insert on " + table
                + " deferrable initially deferred for each row execute function " + name + "()");
    }

    /**
     * The chained-commit scenario's messages, in order: a duplicate ({@code ok-0} twice), a
     * message that fails once ({@code flaky}), one whose COMMIT is refused ({@code commit-refused},
     * see {@link #refuseCommits}) and a poison message ({@code poison}).
     */
    public static final List<String> CHAIN_KEYS = List.of("ok-0", "ok-1", "ok-0", "ok-2", "flaky", "ok-3",
            "commit-refused", "ok-4", "poison", "ok-5");

    /**
     * {@link #recorder} for the chained-commit scenario: {@code poison} always fails, {@code flaky}
     * fails its first run.
     */
    public Handler chainScenario(String consumer) {
        AtomicBoolean failOnce = new AtomicBoolean(true);
        Handler recorder = recorder(consumer);
        return (tx, m) -> {
            if (m.key().equals("poison") || (m.key().equals("flaky") && failOnce.getAndSet(false))) {
                throw new IllegalStateException("cannot handle " + m.key());
            }
            return recorder.handle(tx, m);
        };
    }

    /** {@link #recorder} after {@link #sleep} in the handler's transaction: a slow handler. */
    public Handler slowRecorder(String consumer, double seconds) {
        Handler recorder = recorder(consumer);
        return (tx, m) -> {
            sleep(tx, seconds);
            return recorder.handle(tx, m);
        };
    }

    /** Makes the database wait {@code seconds} on {@code tx}: a handler's slow work in its transaction. */
    public void sleep(Connection tx, double seconds) throws SQLException {
        try (Statement s = tx.createStatement()) {
            s.execute("select " + (postgres ? "pg_sleep" : "sleep") + "(" + seconds + ")");
        }
    }

    /** A handler that inserts one row per run, tagged with the consumer name. */
    public Handler recorder(String consumer) {
        return (tx, m) -> {
            insert(tx, consumer, m.key(), m.redelivered(), m.header("traceparent"), m.payload());
            return null;
        };
    }

    /**
     * A handler that runs {@code delegate} and adds the id of the database transaction it ran
     * in to {@code transactions}: fewer ids than messages means messages shared transactions.
     */
    public Handler recordingTransactions(java.util.Set<Long> transactions, Handler delegate) {
        return (tx, m) -> {
            byte[] result = delegate.handle(tx, m);
            transactions.add(transactionId(tx));
            return result;
        };
    }

    /** The id of {@code tx}'s transaction; on MariaDB this writes a row to learn it. */
    private long transactionId(Connection tx) throws SQLException {
        try (Statement s = tx.createStatement()) {
            if (!postgres) {
                s.executeUpdate("insert into " + transactions + " () values ()");
            }
            try (ResultSet rs = s.executeQuery(postgres ? "select txid_current()"
                    : "select row_start from " + transactions + " where id = last_insert_id()")) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    public void insert(Connection tx, String consumer, String key, boolean redelivered, String traceparent,
            byte[] payload) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("insert into " + table + " values (?, ?, ?, ?, ?)")) {
            ps.setString(1, consumer);
            ps.setString(2, key);
            ps.setBoolean(3, redelivered);
            ps.setString(4, traceparent);
            ps.setBytes(5, payload);
            ps.executeUpdate();
        }
    }

    /** Rows of {@code consumer}'s effects, by key. */
    public Map<String, Integer> countsByKey(String consumer) {
        Map<String, Integer> counts = new HashMap<>();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "select message_key, count(*) from " + table + " where consumer = ? group by message_key")) {
            ps.setString(1, consumer);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    counts.put(rs.getString(1), rs.getInt(2));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return counts;
    }

    public int count(String consumer, String key) {
        return countsByKey(consumer).getOrDefault(key, 0);
    }

    public int total(String consumer) {
        return countsByKey(consumer).values().stream().mapToInt(Integer::intValue).sum();
    }

    public String traceparent(String consumer, String key) {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "select traceparent from " + table + " where consumer = ? and message_key = ?")) {
            ps.setString(1, consumer);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private void execute(String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }
}
