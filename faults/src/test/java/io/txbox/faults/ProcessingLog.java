package io.txbox.faults;

import io.txbox.inbox.Handler;
import io.txbox.testkit.KeyOrder;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The order in which a consumer's handler committed its messages: each handled message inserts
 * its payload into a table with a generated key, inside the handler's transaction, so
 * a rolled-back attempt leaves nothing and one consumer thread's committed rows read back by id
 * in the order it processed them.
 */
final class ProcessingLog {
    private final DataSource ds;

    /** The log in {@code db}'s schema, created if it is not there. */
    ProcessingLog(TestDatabase db) {
        this.ds = db.dataSource();
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS processing_log (id " + FaultSql.of(db).generatedKey()
                    + ", consumer text NOT NULL, payload text NOT NULL)");
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Logs each message's payload, then runs {@code delegate}, in the same transaction. */
    Handler recorder(String consumer, Handler delegate) {
        return (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("INSERT INTO processing_log (consumer, payload) VALUES (?, ?)")) {
                ps.setString(1, consumer);
                ps.setString(2, new String(m.payload(), StandardCharsets.UTF_8));
                ps.executeUpdate();
            }
            return delegate.handle(tx, m);
        };
    }

    /** The per-key order oracle fed {@code consumer}'s committed {@link Feeder} payloads in processing order. */
    KeyOrder keyOrder(String consumer) {
        KeyOrder order = new KeyOrder();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT payload FROM processing_log WHERE consumer = ? ORDER BY id")) {
            ps.setString(1, consumer);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Feeder.add(order, rs.getString(1));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return order;
    }
}
