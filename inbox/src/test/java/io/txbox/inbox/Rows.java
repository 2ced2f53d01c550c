package io.txbox.inbox;

import io.txbox.TxboxTables;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** Reads and shapes inbox rows directly, to check what the inbox wrote. */
final class Rows {
    private final DataSource ds;
    private final TxboxTables tables;

    Rows(DataSource ds, TxboxTables tables) {
        this.ds = ds;
        this.tables = tables;
    }

    String inbox() {
        return tables.qualified(tables.inboxTable());
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

    java.time.Instant timestamp(String consumer, String key, String column) {
        String sql = "select " + column + " from " + inbox() + " where consumer = ? and message_key = ?";
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, consumer);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getObject(1, java.time.OffsetDateTime.class).toInstant();
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
