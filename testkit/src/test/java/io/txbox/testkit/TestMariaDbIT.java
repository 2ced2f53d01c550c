package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

class TestMariaDbIT {
  @RegisterExtension static final TestMariaDb DB = TestMariaDb.perClass(3);

  // A second extension stands in for another test class: its own database on the same server.
  @RegisterExtension static final TestMariaDb OTHER = TestMariaDb.perClass();

  @Test
  void dataSource_connectsWithTheClassDatabaseAsDefault() throws SQLException {
    try (Connection c = DB.dataSource().getConnection()) {
      assertThat(query(c, "SELECT DATABASE()")).isEqualTo(DB.schema());
    }
    assertThat(DB.schema()).startsWith("t_testmariadbit_").hasSizeLessThanOrEqualTo(63);
  }

  @Test
  void tableOfOneClass_isInvisibleToAnother() throws SQLException {
    try (Connection c = DB.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders (id int PRIMARY KEY)");
      s.execute("INSERT INTO orders VALUES (1)");
    }
    try (Connection c = OTHER.dataSource().getConnection()) {
      assertThatThrownBy(() -> query(c, "SELECT count(*) FROM orders"))
          .isInstanceOf(SQLException.class)
          .satisfies(e -> assertThat(((SQLException) e).getErrorCode()).isEqualTo(1146)); // no such table
    }
  }

  @Test
  void newSchema_isAnEmptyDatabaseReachableThroughItsUrl() throws SQLException {
    String extra = DB.newSchema("Extra Schema");
    assertThat(extra).startsWith("t_extra_schema_");
    try (Connection c = DriverManager.getConnection(DB.jdbcUrl(extra), DB.user(), DB.password())) {
      assertThat(query(c, "SELECT DATABASE()")).isEqualTo(extra);
      assertThat(query(c, "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()"))
          .isEqualTo("0");
    }
    assertThat(DB.qualified(extra, "t")).isEqualTo("`" + extra + "`.`t`");
  }

  @Test
  void serverDown_failsFastNamingTheAddressAndHowToStartIt() {
    String url = "jdbc:mariadb://127.0.0.1:" + Fixtures.closedPort() + "/test";
    long start = System.nanoTime();
    assertThatThrownBy(() -> TestMariaDb.server(url, null, null))
        .isInstanceOf(TestkitException.class)
        .hasMessageContaining("MariaDB is not reachable at " + url)
        .hasMessageContaining(TestMariaDb.ENV_URL)
        .hasMessageContaining(TestMariaDb.START_HINT);
    // a second class on the same dead server fails at once, with the same message
    assertThatThrownBy(() -> TestMariaDb.server(url, null, null))
        .isInstanceOf(TestkitException.class)
        .hasMessageContaining("MariaDB is not reachable at " + url);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(TestMariaDb.CONNECT_TIMEOUT.multipliedBy(2));
  }

  @Test
  void environmentUrl_notMariadb_isRefusedNamingIt() {
    assertThatThrownBy(() -> TestMariaDb.server("jdbc:postgresql://127.0.0.1/test", "root", ""))
        .isInstanceOf(TestkitException.class)
        .hasMessageContaining(TestMariaDb.ENV_URL)
        .hasMessageContaining("jdbc:postgresql://127.0.0.1/test");
  }

  @Test
  void endpointUrl_replacesTheDatabaseAndKeepsOptions() {
    TestMariaDb.Endpoint e = TestMariaDb.endpoint("jdbc:mysql://db:3307/app?sslMode=disable", "u", "secret");
    assertThat(e.url("t_x")).isEqualTo("jdbc:mysql://db:3307/t_x?sslMode=disable");
    assertThat(e.url(null)).isEqualTo("jdbc:mysql://db:3307/?sslMode=disable");
    assertThat(e.toString()).doesNotContain("secret");
  }

  @Test
  void afterAll_dropsTheClassDatabaseAndItsExtraDatabases() throws SQLException {
    DatabaseFixture.created.clear();
    Fixtures.run(DatabaseFixture.class).testEvents().assertStatistics(s -> s.succeeded(1));
    assertThat(DatabaseFixture.created).hasSize(2);
    try (Connection c = DB.connection(); Statement s = c.createStatement()) {
      for (String name : DatabaseFixture.created) {
        try (ResultSet rs = s.executeQuery("SELECT count(*) FROM information_schema.schemata WHERE schema_name = '"
            + name + "'")) {
          rs.next();
          assertThat(rs.getInt(1)).as(name).isZero();
        }
      }
    }
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class DatabaseFixture {
    static final List<String> created = new ArrayList<>();
    @RegisterExtension static final TestMariaDb FIXTURE_DB = TestMariaDb.perClass();

    @Test
    void createsTwoDatabases() {
      created.add(FIXTURE_DB.schema());
      created.add(FIXTURE_DB.newSchema("extra"));
    }
  }

  private static String query(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
