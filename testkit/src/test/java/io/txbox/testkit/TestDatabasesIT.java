package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

class TestDatabasesIT {
  @RegisterExtension static final TestDatabases DBS = TestDatabases.perClass(2);

  private static final Set<TestDatabase.Kind> seen = ConcurrentHashMap.newKeySet();

  @ParameterizedTest(name = "{0}")
  @ArgumentsSource(TestDatabases.Each.class)
  void each_handsTheTestOneWorkingDatabaseOfEachKind(TestDatabase db) throws SQLException {
    seen.add(db.kind());
    String table = db.qualified(db.schema(), "orders");
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + table + " (id int PRIMARY KEY)");
      s.execute("INSERT INTO " + table + " VALUES (1)");
      try (ResultSet rs = s.executeQuery("SELECT count(*) FROM orders")) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(1);
      }
    }
  }

  @AfterAll
  static void bothKindsRan() {
    assertThat(seen).containsExactlyInAnyOrder(TestDatabase.Kind.POSTGRESQL, TestDatabase.Kind.MARIADB);
    assertThat(DBS.all()).containsExactly(DBS.postgres(), DBS.mariadb());
  }
}
