package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;

/**
 * MariaDB's counterpart of the testkit's PostgreSQL {@code DeleteGate}: holds every {@code DELETE}
 * on one table until {@link #close()}. A {@code BEFORE DELETE} trigger waits for a named lock
 * ({@code GET_LOCK}) that a connection of the gate holds, so a deleting session waits inside its
 * transaction, shown as {@code User lock} in the process list (with the trigger's statement as its query).
 */
final class MariaDbDeleteGate implements AutoCloseable {
    private final DataSource dataSource;
    private final Connection holder;
    private final String trigger;
    private final String lock;

    private MariaDbDeleteGate(DataSource dataSource, Connection holder, String trigger, String lock) {
        this.dataSource = dataSource;
        this.holder = holder;
        this.trigger = trigger;
        this.lock = lock;
    }

    /** Holds deletes on {@code table} ({@code `schema`.`table`}) of {@code schema} from now on. */
    static MariaDbDeleteGate shut(DataSource dataSource, String schema, String table) throws SQLException {
        String suffix = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffL);
        String lock = "txbox_delete_gate_" + suffix;
        String trigger = "`" + schema + "`.txbox_delete_gate_" + suffix;
        Connection holder = dataSource.getConnection();
        holder.setAutoCommit(true);
        try (Statement s = holder.createStatement()) {
            s.execute("SELECT GET_LOCK('" + lock + "', 10)");
            // waits for the gate, then lets the next deleting row through at once
            s.execute("CREATE TRIGGER " + trigger + " BEFORE DELETE ON " + table + " FOR EACH ROW"
                    + " SET @txbox_gate = GET_LOCK('" + lock + "', 600) + RELEASE_LOCK('" + lock + "')");
        } catch (SQLException e) {
            holder.close();
            throw e;
        }
        return new MariaDbDeleteGate(dataSource, holder, trigger, lock);
    }

    /** Waits until a session waits at the gate inside its transaction. */
    void awaitWaiting(Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
            try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "SELECT count(*) FROM information_schema.processlist WHERE state = 'User lock' AND info LIKE 'SET @txbox_gate%'");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        });
    }

    /** Lets waiting and later deletes through and drops the trigger. */
    @Override
    public void close() throws SQLException {
        try (Connection c = holder; Statement s = c.createStatement()) {
            // the lock first: a delete still waiting holds the table, and the DROP would wait for it
            s.execute("SELECT RELEASE_LOCK('" + lock + "')");
            s.execute("DROP TRIGGER IF EXISTS " + trigger);
        }
    }
}
