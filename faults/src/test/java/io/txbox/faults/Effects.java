package io.txbox.faults;

import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * The business side of every fault test: a table of effects with no unique constraint, so a
 * double effect shows up as two rows instead of being hidden by the database.
 */
final class Effects {
    private static final Map<TestDatabase, TxboxTables> MIGRATED = new ConcurrentHashMap<>();

    private final DataSource ds;

    /** The txbox tables of a test class's {@code db}, migrated with the effects table once. */
    static TxboxTables migrated(TestDatabase db) {
        return migrated(db, effects -> { });
    }

    /** As {@link #migrated(TestDatabase)}; {@code andThen} adds the test's own tables or rows, also once. */
    static TxboxTables migrated(TestDatabase db, Consumer<Effects> andThen) {
        return MIGRATED.computeIfAbsent(db, d -> {
            TxboxTables t = TxboxTables.inSchema(d.schema());
            TxboxMigrations.migrate(d.dataSource(), t);
            andThen.accept(new Effects(d.dataSource()));
            return t;
        });
    }

    Effects(DataSource ds) {
        this.ds = ds;
        // plain types and no reserved words, so the same table works on PostgreSQL and MariaDB
        exec("CREATE TABLE IF NOT EXISTS effects (consumer varchar(255) NOT NULL, message_key varchar(255) NOT NULL)");
    }

    /** Writes one effect for {@code key} inside the caller's transaction. */
    static void apply(Connection tx, String consumer, String key) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO effects (consumer, message_key) VALUES (?, ?)")) {
            ps.setString(1, consumer);
            ps.setString(2, key);
            ps.executeUpdate();
        }
    }

    /** A handler that writes one effect per message, keyed by the message key. */
    static Handler recorder(String consumer) {
        return (tx, m) -> {
            apply(tx, consumer, m.key());
            return null;
        };
    }

    /** Effects of {@code consumer}, counted per key. */
    Map<String, Integer> countsByKey(String consumer) {
        Map<String, Integer> counts = new HashMap<>();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT message_key, count(*) FROM effects WHERE consumer = ? GROUP BY message_key")) {
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

    int count(String consumer, String key) {
        return countsByKey(consumer).getOrDefault(key, 0);
    }

    int distinct(String consumer) {
        return countsByKey(consumer).size();
    }

    void exec(String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    long queryLong(String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getLong(1) : -1;
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }
}
