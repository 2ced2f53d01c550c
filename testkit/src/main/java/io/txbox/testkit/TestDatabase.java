package io.txbox.testkit;

import java.sql.Connection;
import javax.sql.DataSource;

/**
 * A database a test class owns for its lifetime: a PostgreSQL schema ({@link TestPostgres}) or a
 * MariaDB database ({@link TestMariaDb}). {@link TestDatabases} hands one of each to a
 * parameterized test, so one suite runs on both.
 *
 * <p>"Schema" means what the database calls a namespace of tables: a schema on PostgreSQL, a
 * database on MariaDB and MySQL.
 */
public interface TestDatabase {
  /** The database families the testkit serves. */
  enum Kind {
    POSTGRESQL("PostgreSQL"),
    MARIADB("MariaDB");

    private final String displayName;

    Kind(String displayName) {
      this.displayName = displayName;
    }

    @Override
    public String toString() {
      return displayName;
    }
  }

  /** Which database this is. */
  Kind kind();

  /** This class's schema (a database on MariaDB); unquoted-safe lower-case name. */
  String schema();

  /** A pooled data source whose default schema is {@link #schema()}; closed after the class. */
  DataSource dataSource();

  /** A new unpooled connection on {@link #schema()}; the caller closes it. */
  Connection connection();

  /** Creates another empty schema, dropped after the class, and returns its name. */
  String newSchema(String hint);

  /** A JDBC URL whose default schema is {@link #schema()}. */
  String jdbcUrl();

  /** A JDBC URL whose default schema is {@code schema}. */
  String jdbcUrl(String schema);

  /** The login for {@link #jdbcUrl()}. */
  String user();

  /** The password for {@link #jdbcUrl()}; empty when none is needed. */
  String password();

  /**
   * {@code schema.table} quoted the way this database quotes identifiers ({@code "s"."t"} or
   * {@code `s`.`t`}), for a test's own SQL. Both names must be plain identifiers.
   */
  String qualified(String schema, String table);
}
