package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

class TestPostgresIT {

  @RegisterExtension static final TestPostgres PG = TestPostgres.perClass(3);

  // A second extension stands in for another test class: its own schema on the same server.
  @RegisterExtension static final TestPostgres OTHER = TestPostgres.perClass();

  @Test
  void dataSource_connectsWithTheClassSchemaAsCurrentSchema() throws SQLException {
    try (Connection c = PG.dataSource().getConnection()) {
      assertThat(query(c, "SELECT current_schema()")).isEqualTo(PG.schema());
    }
    assertThat(PG.schema()).startsWith("t_testpostgresit_").hasSizeLessThanOrEqualTo(63);
  }

  @Test
  void tableOfOneClass_isInvisibleToAnother() throws SQLException {
    try (Connection c = PG.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders (id int PRIMARY KEY)");
      s.execute("INSERT INTO orders VALUES (1)");
    }

    try (Connection c = OTHER.dataSource().getConnection()) {
      assertThatThrownBy(() -> query(c, "SELECT count(*) FROM orders"))
          .isInstanceOf(SQLException.class)
          .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("42P01"));
    }
    assertThat(OTHER.schema()).isNotEqualTo(PG.schema());
  }

  @Test
  void jdbcUrl_withUserAndPassword_reachesTheSameSchema() throws SQLException {
    try (Connection c = DriverManager.getConnection(PG.jdbcUrl(), PG.user(), PG.password())) {
      assertThat(query(c, "SELECT current_schema()")).isEqualTo(PG.schema());
    }
  }

  @Test
  void newSchema_isEmptyAndReachableThroughItsUrl() throws SQLException {
    String extra = PG.newSchema("Extra Schema");

    assertThat(extra).startsWith("t_extra_schema_");
    try (Connection c = DriverManager.getConnection(PG.jdbcUrl(extra), PG.user(),
        PG.password())) {
      assertThat(query(c, "SELECT current_schema()")).isEqualTo(extra);
      assertThat(query(c, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"))
          .isEqualTo("0");
    }
  }

  @Test
  void perClassPoolSize_limitsTheDataSource() throws SQLException {
    assertThat(PG.dataSource().unwrap(HikariDataSource.class).getMaximumPoolSize()).isEqualTo(3);
  }

  @Test
  void afterAll_dropsTheClassSchemaAndItsExtraSchemas() throws SQLException {
    SchemaFixture.created.clear();

    Fixtures.run(SchemaFixture.class).testEvents().assertStatistics(s -> s.succeeded(1));

    assertThat(SchemaFixture.created).hasSize(2);
    try (Connection c = PG.adminDataSource().getConnection()) {
      for (String schema : SchemaFixture.created) {
        assertThat(query(c, "SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'"))
            .as("schema %s after the class", schema).isEqualTo("0");
      }
    }
  }

  private static String query(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class SchemaFixture {
    static final List<String> created = new ArrayList<>();

    @RegisterExtension static final TestPostgres FIXTURE_PG = TestPostgres.perClass();

    @Test
    void createsTablesInTwoSchemas() throws SQLException {
      created.add(FIXTURE_PG.schema());
      created.add(FIXTURE_PG.newSchema("more"));
      try (Connection c = FIXTURE_PG.dataSource().getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE t (id int)");
        s.execute("CREATE TABLE " + created.get(1) + ".u (id int)");
      }
    }
  }
}
