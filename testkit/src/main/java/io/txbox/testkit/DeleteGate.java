package io.txbox.testkit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Holds every {@code DELETE} on one PostgreSQL table until {@link #close()}: a fault-injection
 * helper that stops a transaction at a known point, for example a relay's batch after it claimed
 * and published rows and before it deletes them.
 *
 * <p>{@link #shut} installs a statement-level {@code BEFORE DELETE} trigger that waits for a
 * shared advisory lock, and takes that lock exclusively on a connection of its own (a random
 * key). A session
 * that deletes from the table then waits inside its transaction, visible in {@code
 * pg_stat_activity} ({@link #awaitWaiting}); the test can terminate it or kill its process.
 * {@link #close()} releases the lock, so waiting deletes go through, and drops the trigger.
 *
 * <p>Needs the right to create functions in the table's schema and triggers on the table.
 */
public final class DeleteGate implements AutoCloseable {
  private final DataSource dataSource;
  private final Connection holder;
  private final String table;
  private final String function;
  private final String trigger;
  private final long lockKey;

  private DeleteGate(DataSource dataSource, Connection holder, String table, String function,
      String trigger, long lockKey) {
    this.dataSource = dataSource;
    this.holder = holder;
    this.table = table;
    this.function = function;
    this.trigger = trigger;
    this.lockKey = lockKey;
  }

  /**
   * Holds deletes on {@code table} from now on.
   *
   * @param dataSource a data source on the table's database, for the lock holder and the DDL
   * @param schema the table's schema, where the trigger function is created
   * @param table the table, schema-qualified and quoted as it must appear in SQL
   * @throws TestkitException if the trigger cannot be created or the lock not taken
   */
  public static DeleteGate shut(DataSource dataSource, String schema, String table) {
    String suffix = Names.randomSuffix(8);
    String function = "\"" + schema + "\".txbox_delete_gate_" + suffix;
    String trigger = "txbox_delete_gate_" + suffix;
    long lockKey = ThreadLocalRandom.current().nextLong();
    Connection holder = null;
    try {
      holder = dataSource.getConnection();
      holder.setAutoCommit(true);
      execute(holder, "SELECT pg_advisory_lock(" + lockKey + ")");
      execute(holder, "CREATE FUNCTION " + function + "() RETURNS trigger LANGUAGE plpgsql AS $$"
          + " BEGIN PERFORM pg_advisory_xact_lock_shared(" + lockKey + "); RETURN NULL; END $$");
      execute(holder, "CREATE TRIGGER " + trigger + " BEFORE DELETE ON " + table
          + " FOR EACH STATEMENT EXECUTE FUNCTION " + function + "()");
      return new DeleteGate(dataSource, holder, table, function, trigger, lockKey);
    } catch (SQLException e) {
      if (holder != null) {
        try (Connection c0 = holder) {
          execute(c0, "SELECT pg_advisory_unlock_all()");
        } catch (SQLException ignored) {
          // cleaning up after a failure
        }
      }
      throw new TestkitException("Cannot hold deletes on " + table + ": " + e.getMessage(), e);
    }
  }

  /**
   * Waits until a session whose {@code application_name} is {@code applicationName} waits at
   * the gate, inside its transaction, and returns its backend pid.
   *
   * @throws TestkitException if none does within {@code timeout}
   */
  public int awaitWaiting(String applicationName, Duration timeout) {
    AtomicLong pid = new AtomicLong();
    String sql = "SELECT pid FROM pg_stat_activity WHERE application_name = ?"
        + " AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND xact_start IS NOT NULL"
        + " LIMIT 1";
    Poll.until(timeout, Duration.ofMillis(10), () -> {
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setString(1, applicationName);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            pid.set(rs.getInt(1));
            return true;
          }
          return false;
        }
      }
    }, () -> "No session named " + applicationName + " waited to delete from " + table
        + " within " + timeout.toSeconds() + " s.");
    return (int) pid.get();
  }

  /** Lets waiting and later deletes through and removes the trigger and its function. */
  @Override
  public void close() {
    try {
      try (Connection c0 = holder) {
        // unlock explicitly: a pooled connection's session outlives close()
        execute(c0, "SELECT pg_advisory_unlock(" + lockKey + ")");
      }
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(true);
        execute(c, "DROP TRIGGER IF EXISTS " + trigger + " ON " + table);
        execute(c, "DROP FUNCTION IF EXISTS " + function + "()");
      }
    } catch (SQLException e) {
      throw new TestkitException("Cannot remove the delete gate on " + table + ": " + e.getMessage(),
          e);
    }
  }

  private static void execute(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
