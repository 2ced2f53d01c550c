package io.txbox.testkit;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * What a change-data-capture test needs of its database, checked before it starts a connector:
 * PostgreSQL with {@code wal_level = logical} and a free replication slot; MariaDB or MySQL with
 * the binary log on, {@code binlog_format = ROW} and {@code binlog_row_image = FULL}. This class
 * only checks: it never changes a server setting, since that takes a restart of a server other
 * tests share. The script {@code .ci/enable-cdc} of this repository sets them, idempotently.
 */
public final class TestCdc {
  private TestCdc() {}

  /**
   * Returns quietly when {@code db}'s server is ready for change data capture.
   *
   * @throws TestkitException naming each missing setting and {@code .ci/enable-cdc}
   */
  public static void require(TestDatabase db) {
    List<String> missing = new ArrayList<>();
    try (Connection c = db.connection(); Statement st = c.createStatement()) {
      if (db.kind() == TestDatabase.Kind.POSTGRESQL) {
        expect(missing, st, "SHOW wal_level", "logical", "wal_level");
        try (ResultSet rs = st.executeQuery("SELECT current_setting('max_replication_slots')::int"
            + " - (SELECT count(*) FROM pg_replication_slots)")) {
          rs.next();
          if (rs.getInt(1) < 1) {
            missing.add("a free replication slot (all max_replication_slots are taken: drop the ones left"
                + " behind, see pg_replication_slots)");
          }
        }
      } else {
        expect(missing, st, "SELECT @@log_bin", "1", "log_bin (the binary log)");
        expect(missing, st, "SELECT @@binlog_format", "ROW", "binlog_format");
        expect(missing, st, "SELECT @@binlog_row_image", "FULL", "binlog_row_image");
      }
    } catch (SQLException e) {
      throw new TestkitException(db.kind() + ": cannot read the change-data-capture settings: " + e.getMessage(), e);
    }
    if (!missing.isEmpty()) {
      throw new TestkitException(db.kind() + " is not ready for change data capture: " + String.join("; ", missing)
          + ". Run .ci/enable-cdc (it sets them idempotently, restarting the server only when a setting"
          + " changes), then run the test again.");
    }
  }

  private static void expect(List<String> missing, Statement st, String query, String wanted, String name)
      throws SQLException {
    try (ResultSet rs = st.executeQuery(query)) {
      String actual = rs.next() ? rs.getString(1) : null;
      if (!wanted.equalsIgnoreCase(String.valueOf(actual))) {
        missing.add(name + " is " + actual + ", needs " + wanted);
      }
    }
  }
}
