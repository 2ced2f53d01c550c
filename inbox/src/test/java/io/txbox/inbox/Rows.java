package io.txbox.inbox;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * The migrated inbox tables of one test database, and the test's own SQL on them in that
 * database's words (PostgreSQL or MariaDB), to check what the inbox wrote.
 */
final class Rows {
    private static final Map<TestDatabase, Rows> MIGRATED = new ConcurrentHashMap<>();

    final TestDatabase db;
    final TxboxTables tables;
    private final DataSource ds;

    private Rows(TestDatabase db) {
        this.db = db;
        this.ds = db.dataSource();
        this.tables = TxboxTables.inSchema(db.schema());
        TxboxMigrations.migrate(ds, tables);
    }

    /** The tables of {@code db}'s schema, migrated on first use. */
    static Rows of(TestDatabase db) {
        return MIGRATED.computeIfAbsent(db, Rows::new);
    }

    boolean postgres() {
        return db.kind() == TestDatabase.Kind.POSTGRESQL;
    }

    String inbox() {
        return db.qualified(tables.schema(), tables.inboxTable());
    }

    /** A table of the test's own in this schema. */
    String table(String name) {
        return db.qualified(db.schema(), name);
    }

    /** A text column type that can be a key. */
    String text() {
        return postgres() ? "text" : "varchar(255)";
    }

    /** The database's time now. */
    String now() {
        return postgres() ? "now()" : "CURRENT_TIMESTAMP(6)";
    }

    /** The database's time {@code amount} {@code unit}s ago (unit: day, second, microsecond). */
    String ago(long amount, String unit) {
        return postgres() ? "now() - interval '" + amount + " " + unit + "'"
                : "CURRENT_TIMESTAMP(6) - INTERVAL " + amount + " " + unit;
    }

    /** A bytes column read as UTF-8 text. */
    String utf8(String column) {
        return postgres() ? "convert_from(" + column + ", 'UTF8')" : "CONVERT(" + column + " USING utf8mb4)";
    }

    long count(String where) {
        return queryLong("select count(*) from " + inbox() + " where " + where);
    }

    long queryLong(String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    String status(String consumer, String key) {
        return string("select status from " + inbox() + " where consumer = ? and message_key = ?", consumer, key);
    }

    String string(String sql, String... args) {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setString(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    /** A timestamp column of one entry, free of any time zone. */
    Instant timestamp(String consumer, String key, String column) {
        return instant("select " + epoch(column) + " from " + inbox() + " where consumer = ? and message_key = ?",
                consumer, key);
    }

    /** The database's clock. */
    Instant dbNow() {
        return instant("select " + epoch(now()), new String[0]);
    }

    private String epoch(String expression) {
        return postgres() ? "extract(epoch from " + expression + ")" : "UNIX_TIMESTAMP(" + expression + ")";
    }

    private Instant instant(String sql, String... args) {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setString(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                BigDecimal seconds = rs.getBigDecimal(1);
                return Instant.EPOCH.plus(seconds.movePointRight(6).longValue(), ChronoUnit.MICROS);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    void execute(String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }
}
