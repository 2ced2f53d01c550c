package io.txbox.testkit;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;

/**
 * A fresh PostgreSQL schema for each test class, dropped with everything in it after the class.
 *
 * <pre>{@code
 * @RegisterExtension static final TestPostgres PG = TestPostgres.perClass();
 *
 * @Test void insertsARow() throws SQLException {
 *   try (Connection c = PG.dataSource().getConnection()) { ... }   // search_path = PG.schema()
 * }
 * }</pre>
 *
 * <p>Register it as a {@code static} field: the schema is created in {@code beforeAll} and
 * dropped ({@code CASCADE}) in {@code afterAll}. Every URL and pool it hands out has {@code
 * currentSchema} set, so unqualified table names land in this class's schema and two classes
 * cannot see each other's tables.
 *
 * <p>The server is, in order: the one named by {@code TXBOX_TEST_JDBC_URL} (with {@code
 * TXBOX_TEST_JDBC_USER}, {@code TXBOX_TEST_JDBC_PASSWORD}); else {@value #DEFAULT_JDBC_URL} as
 * {@value #DEFAULT_USER}; else, if that is unreachable and Testcontainers finds a Docker engine,
 * one {@code PostgreSQLContainer} per JVM. If none answers, {@code beforeAll} throws a {@link
 * TestkitException} within the connect timeout.
 */
public final class TestPostgres extends PerClassDatabase<PgEndpoint> {
  /** The server used when the environment names none. */
  public static final String DEFAULT_JDBC_URL = "jdbc:postgresql://127.0.0.1:5432/test";
  /** The login used when the environment names none. */
  public static final String DEFAULT_USER = "postgres";
  /** Maximum size of the {@link #dataSource()} pool unless configured. */
  public static final int DEFAULT_POOL_SIZE = 5;
  /** How long to wait for the server to answer before failing the class. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);

  private static final org.slf4j.Logger log = LoggerFactory.getLogger(TestPostgres.class);
  private static final Pattern CURRENT_SCHEMA_PARAM =
      Pattern.compile("([?&])currentSchema=[^&]*&?", Pattern.CASE_INSENSITIVE);

  private final @Nullable PgEndpoint fixedEndpoint;
  private final Duration connectTimeout;

  private TestPostgres(Builder builder) {
    super(log, "schema", builder.poolSize);
    this.fixedEndpoint = builder.jdbcUrl == null ? null
        : new PgEndpoint(builder.jdbcUrl, builder.user, builder.password, "TestPostgres.builder()");
    this.connectTimeout = builder.connectTimeout;
  }

  /** Returns an extension with the default server and a pool of {@value #DEFAULT_POOL_SIZE}. */
  public static TestPostgres perClass() {
    return builder().build();
  }

  /**
   * Returns an extension whose {@link #dataSource()} holds at most {@code poolSize} connections.
   *
   * @param poolSize maximum pool size, at least 1
   */
  public static TestPostgres perClass(int poolSize) {
    return builder().poolSize(poolSize).build();
  }

  /** Returns a builder for a non-default server, pool size or connect timeout. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public Kind kind() {
    return Kind.POSTGRESQL;
  }

  @Override
  public String qualified(String schema, String table) {
    return '"' + schema + "\".\"" + table + '"';
  }

  @Override
  PgEndpoint start() {
    if (fixedEndpoint != null) {
      PostgresServer.probe(fixedEndpoint, connectTimeout);
      return fixedEndpoint;
    }
    return PostgresServer.defaultEndpoint(connectTimeout);
  }

  @Override
  Map<String, String> poolProperties() {
    return Map.of();
  }

  /**
   * Returns a JDBC URL whose {@code currentSchema} is {@code schema}, for example one made by
   * {@link #newSchema(String)}.
   *
   * @param schema an existing schema name
   */
  @Override
  public String jdbcUrl(String schema) {
    return withCurrentSchema(server().url(), schema);
  }

  /** Returns the login role for {@link #jdbcUrl()}. */
  @Override
  public String user() {
    return server().user();
  }

  /** Returns the password for {@link #jdbcUrl()}; empty for trust authentication. */
  @Override
  public String password() {
    return server().password();
  }

  /**
   * Opens a new, unpooled connection on {@link #jdbcUrl()}. The caller closes it.
   *
   * @throws TestkitException if the server does not answer
   */
  @Override
  public Connection connection() {
    return open(jdbcUrl());
  }

  /**
   * Returns an unpooled data source on the server without a {@code currentSchema}, for work
   * outside this class's schema (creating a database, reading {@code pg_catalog}). Each {@code
   * getConnection()} opens a new connection.
   */
  public DataSource adminDataSource() {
    PgEndpoint server = server();
    return new UnpooledDataSource(server.url(), this);
  }

  @Override
  public String toString() {
    PgEndpoint server = endpoint;
    return "TestPostgres[schema=" + schema + ", server=" + (server == null ? "-" : server) + "]";
  }

  @Override
  void create(PgEndpoint server, String name) {
    try (Connection c = PostgresServer.connect(server, server.url(), connectTimeout);
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA \"" + name + "\"");
    } catch (SQLException e) {
      if (PostgresServer.isUnreachable(e)) {
        throw PostgresServer.unreachable(server, e, "");
      }
      throw new TestkitException("PostgreSQL at " + server.url() + ": cannot create schema "
          + name + ": " + e.getMessage(), e);
    }
    created(name);
  }

  @Override
  void drop(PgEndpoint server, List<String> names) {
    try (Connection c = PostgresServer.connect(server, server.url(), connectTimeout);
        Statement s = c.createStatement()) {
      // A test that leaked an open transaction must not make afterAll wait forever.
      s.execute("SET lock_timeout = '10s'");
      for (String name : names) {
        try {
          s.execute("DROP SCHEMA IF EXISTS \"" + name + "\" CASCADE");
          log.debug("[schema {}] dropped", name);
        } catch (SQLException e) {
          log.warn("[schema {}] could not be dropped on {}: {}", name, server.url(),
              e.getMessage());
        }
      }
    } catch (SQLException e) {
      log.warn("Schemas {} could not be dropped on {}: {}", names, server.url(), e.getMessage());
    }
  }

  private Connection open(String url) {
    PgEndpoint server = server();
    try {
      return PostgresServer.connect(server, url, connectTimeout);
    } catch (SQLException e) {
      throw PostgresServer.isUnreachable(e) ? PostgresServer.unreachable(server, e, "")
          : PostgresServer.failed(server, e);
    }
  }

  static String withCurrentSchema(String url, String schema) {
    String stripped = CURRENT_SCHEMA_PARAM.matcher(url).replaceAll("$1");
    if (stripped.endsWith("?") || stripped.endsWith("&")) {
      return stripped + "currentSchema=" + schema;
    }
    return stripped + (stripped.contains("?") ? "&" : "?") + "currentSchema=" + schema;
  }

  /** A DataSource that opens a plain connection per call, with the extension's timeouts. */
  private static final class UnpooledDataSource implements DataSource {
    private final String url;
    private final TestPostgres owner;
    private @Nullable PrintWriter logWriter;

    UnpooledDataSource(String url, TestPostgres owner) {
      this.url = url;
      this.owner = owner;
    }

    @Override
    public Connection getConnection() {
      return owner.open(url);
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      throw new SQLFeatureNotSupportedException("use getConnection(); the login is fixed");
    }

    @Override
    public @Nullable PrintWriter getLogWriter() {
      return logWriter;
    }

    @Override
    public void setLogWriter(@Nullable PrintWriter out) {
      this.logWriter = out;
    }

    @Override
    public void setLoginTimeout(int seconds) {
      // fixed by the extension's connect timeout
    }

    @Override
    public int getLoginTimeout() {
      return (int) owner.connectTimeout.toSeconds();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
      if (type.isInstance(this)) {
        return type.cast(this);
      }
      throw new SQLException("not a wrapper for " + type.getName());
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
      return type.isInstance(this);
    }
  }

  /** Configures a {@link TestPostgres}. Each setter checks its argument at once. */
  public static final class Builder {
    private @Nullable String jdbcUrl;
    private String user = DEFAULT_USER;
    private String password = "";
    private int poolSize = DEFAULT_POOL_SIZE;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;

    private Builder() {}

    /**
     * Uses this server instead of the environment / local default / Docker lookup. Default: not
     * set.
     *
     * @param jdbcUrl a {@code jdbc:postgresql:} URL of a database the user may create schemas in
     */
    public Builder jdbcUrl(String jdbcUrl) {
      Objects.requireNonNull(jdbcUrl, "jdbcUrl");
      if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
        throw new IllegalArgumentException("jdbcUrl must start with jdbc:postgresql: but was "
            + jdbcUrl);
      }
      this.jdbcUrl = jdbcUrl;
      return this;
    }

    /** Login role for {@link #jdbcUrl(String)}. Default: {@value TestPostgres#DEFAULT_USER}. */
    public Builder user(String user) {
      this.user = Objects.requireNonNull(user, "user");
      return this;
    }

    /** Password for {@link #jdbcUrl(String)}. Default: empty (trust authentication). */
    public Builder password(String password) {
      this.password = Objects.requireNonNull(password, "password");
      return this;
    }

    /**
     * Maximum size of the {@link TestPostgres#dataSource()} pool. Default: {@value
     * TestPostgres#DEFAULT_POOL_SIZE}.
     */
    public Builder poolSize(int poolSize) {
      if (poolSize < 1) {
        throw new IllegalArgumentException("poolSize must be at least 1 but was " + poolSize);
      }
      this.poolSize = poolSize;
      return this;
    }

    /**
     * How long to wait for the server before failing; whole seconds, 1 to 60. Default: 5 s.
     */
    public Builder connectTimeout(Duration connectTimeout) {
      Objects.requireNonNull(connectTimeout, "connectTimeout");
      if (connectTimeout.compareTo(Duration.ofSeconds(1)) < 0
          || connectTimeout.compareTo(Duration.ofSeconds(60)) > 0) {
        throw new IllegalArgumentException(
            "connectTimeout must be between 1 s and 60 s but was " + connectTimeout);
      }
      this.connectTimeout = connectTimeout;
      return this;
    }

    /** Returns the extension; register it as a static {@code @RegisterExtension} field. */
    public TestPostgres build() {
      return new TestPostgres(this);
    }
  }
}
