package io.txbox.testkit;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A fresh MariaDB database for each test class, dropped with everything in it after the class.
 *
 * <pre>{@code
 * @RegisterExtension static final TestMariaDb DB = TestMariaDb.perClass();
 *
 * @Test void insertsARow() throws SQLException {
 *   try (Connection c = DB.dataSource().getConnection()) { ... }   // default database = DB.schema()
 * }
 * }</pre>
 *
 * <p>Register it as a {@code static} field: the database is created in {@code beforeAll} and
 * dropped in {@code afterAll}. Every URL and pool it hands out names this class's database, so
 * unqualified table names land there and two classes cannot see each other's tables. On MariaDB a
 * schema is a database: {@link #schema()} and {@link #newSchema(String)} name databases.
 *
 * <p>The server is the one named by {@code TXBOX_TEST_MARIADB_URL} (a {@code jdbc:mariadb:} or
 * {@code jdbc:mysql:} URL; with {@code TXBOX_TEST_MARIADB_USER}, {@code
 * TXBOX_TEST_MARIADB_PASSWORD}), else {@value #DEFAULT_JDBC_URL} as {@value #DEFAULT_USER} with an
 * empty password. If it does not answer, {@code beforeAll} throws a {@link TestkitException}
 * within {@link #CONNECT_TIMEOUT}, naming the address and how to start the local service; every
 * later class of the JVM fails at once with the same message. The MariaDB Connector/J driver
 * serves both {@code jdbc:mariadb:} and, with {@code permitMysqlScheme}, {@code jdbc:mysql:} URLs.
 */
public final class TestMariaDb extends PerClassDatabase<TestMariaDb.Endpoint> {
  /** The server used when the environment names none. */
  public static final String DEFAULT_JDBC_URL = "jdbc:mariadb://127.0.0.1:3306/test";
  /** The login used when the environment names none. */
  public static final String DEFAULT_USER = "root";
  /** Maximum size of the {@link #dataSource()} pool unless configured. */
  public static final int DEFAULT_POOL_SIZE = 5;
  /** How long to wait for the server to answer before failing the class. */
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

  static final String ENV_URL = "TXBOX_TEST_MARIADB_URL";
  static final String ENV_USER = "TXBOX_TEST_MARIADB_USER";
  static final String ENV_PASSWORD = "TXBOX_TEST_MARIADB_PASSWORD";
  static final String START_HINT =
      "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd";

  private static final Logger log = LoggerFactory.getLogger(TestMariaDb.class);
  /** {@code jdbc:mariadb://host:port} | {@code /database} | {@code ?options}. */
  private static final Pattern URL = Pattern.compile("(jdbc:(?:mariadb|mysql):(?://)?[^/?]*)(/[^?]*)?(\\?.*)?");
  private static final Object SERVER_LOCK = new Object();
  /** Servers found down, by URL: later classes fail at once instead of waiting again. */
  private static final java.util.Map<String, String> SERVER_FAILURES = new java.util.HashMap<>();

  private TestMariaDb(int poolSize) {
    super(log, "database", poolSize);
  }

  /** Returns an extension with the default server and a pool of {@value #DEFAULT_POOL_SIZE}. */
  public static TestMariaDb perClass() {
    return new TestMariaDb(DEFAULT_POOL_SIZE);
  }

  /**
   * Returns an extension whose {@link #dataSource()} holds at most {@code poolSize} connections.
   *
   * @param poolSize maximum pool size, at least 1
   */
  public static TestMariaDb perClass(int poolSize) {
    if (poolSize < 1) {
      throw new IllegalArgumentException("poolSize must be at least 1 but was " + poolSize);
    }
    return new TestMariaDb(poolSize);
  }

  @Override
  public Kind kind() {
    return Kind.MARIADB;
  }

  @Override
  Endpoint start() {
    return server(System.getenv(ENV_URL), System.getenv(ENV_USER), System.getenv(ENV_PASSWORD));
  }

  @Override
  void drop(Endpoint server, List<String> names) {
    try (Connection c = connect(server, server.url(null)); Statement s = c.createStatement()) {
      // A test that leaked an open transaction must not make afterAll wait for long.
      s.execute("SET SESSION lock_wait_timeout = 10");
      for (String name : names) {
        try {
          s.execute("DROP DATABASE IF EXISTS `" + name + "`");
          log.debug("[database {}] dropped", name);
        } catch (SQLException e) {
          log.warn("[database {}] could not be dropped on {}: {}", name, server, e.getMessage());
        }
      }
    } catch (SQLException e) {
      log.warn("Databases {} could not be dropped on {}: {}", names, server, e.getMessage());
    }
  }

  @Override
  Map<String, String> poolProperties() {
    return Map.of("permitMysqlScheme", "true");
  }

  @Override
  public String jdbcUrl(String schema) {
    return server().url(schema);
  }

  @Override
  public String user() {
    return server().user;
  }

  @Override
  public String password() {
    return server().password;
  }

  /**
   * Opens a new, unpooled connection on {@link #jdbcUrl()}. The caller closes it.
   *
   * @throws TestkitException if the server does not answer
   */
  @Override
  public Connection connection() {
    Endpoint server = server();
    try {
      return connect(server, jdbcUrl());
    } catch (SQLException e) {
      throw failure(server, e);
    }
  }

  /**
   * The server's id of {@code connection} ({@code CONNECTION_ID()}), to watch it from another
   * connection with {@link #waitsForLock(long)}; read it before the connection blocks.
   */
  public long connectionId(Connection connection) {
    Objects.requireNonNull(connection, "connection");
    try (Statement st = connection.createStatement();
        java.sql.ResultSet rs = st.executeQuery("SELECT CONNECTION_ID()")) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw failure(server(), e);
    }
  }

  /**
   * Whether the connection with server id {@code connectionId} is waiting for an InnoDB lock right
   * now (or has been running one statement for over half a second, which a lone row write only
   * does behind a lock), for a test that awaits a blocked statement instead of sleeping.
   */
  public boolean waitsForLock(long connectionId) {
    Endpoint server = server();
    try (Connection c = connect(server, jdbcUrl());
        // innodb_trx is served from a cache that can miss a short wait, so a statement still
        // running after half a second (a lone row insert takes milliseconds) counts as waiting too.
        java.sql.PreparedStatement ps = c.prepareStatement("SELECT (SELECT count(*) FROM information_schema.innodb_trx"
            + " WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT')"
            + " + (SELECT count(*) FROM information_schema.processlist"
            + " WHERE id = ? AND command = 'Query' AND time_ms > 500)")) {
      ps.setLong(1, connectionId);
      ps.setLong(2, connectionId);
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    } catch (SQLException e) {
      throw failure(server, e);
    }
  }

  /** A statement a test runs on a connection; it may throw. */
  @FunctionalInterface
  public interface SqlWork<T> {
    T run(Connection connection) throws Exception;
  }

  /**
   * Runs {@code blocked} on {@code second} in another thread and returns its result once {@code
   * first}'s open transaction has ended: waits (up to 20 s) until {@code second} waits for a lock,
   * checks that {@code blocked} has not finished, then commits {@code first} (or rolls it back)
   * and commits {@code second}. For tests of "a concurrent duplicate waits for the first
   * transaction": both connections must have auto-commit off, and {@code first} must hold the lock.
   *
   * @throws TestkitException if {@code second} never waits, or finishes before {@code first} ends
   */
  public <T> T behindOpenTransaction(Connection first, boolean commitFirst, Connection second, SqlWork<T> blocked)
      throws Exception {
    long secondId = connectionId(second);
    java.util.concurrent.CompletableFuture<T> result = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try {
        T value = blocked.run(second);
        second.commit();
        return value;
      } catch (Exception e) {
        throw new java.util.concurrent.CompletionException(e);
      }
    });
    Poll.until(Duration.ofSeconds(20), Duration.ofMillis(20), () -> result.isDone() || waitsForLock(secondId),
        () -> "connection " + secondId + " never waited for a lock held by the first transaction");
    if (result.isDone()) {
      throw new TestkitException("the second connection finished without waiting for the first transaction: "
          + result.handle((v, e) -> e == null ? String.valueOf(v) : String.valueOf(e)).join());
    }
    if (commitFirst) {
      first.commit();
    } else {
      first.rollback();
    }
    try {
      return result.get(20, java.util.concurrent.TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException ce ? ce.getCause() : e.getCause();
      throw cause instanceof Exception ex ? ex : e;
    }
  }

  @Override
  public String qualified(String schema, String table) {
    return '`' + schema + "`.`" + table + '`';
  }

  @Override
  public String toString() {
    return Kind.MARIADB.toString();
  }

  @Override
  void create(Endpoint server, String name) {
    try (Connection c = connect(server, server.url(null)); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4");
    } catch (SQLException e) {
      throw failure(server, e);
    }
    created(name);
  }

  /**
   * The server for this JVM, probed once: a server that is down fails this class and every later
   * one at once, with the same message.
   */
  static Endpoint server(@Nullable String envUrl, @Nullable String envUser, @Nullable String envPassword) {
    Endpoint server = envUrl == null || envUrl.isBlank()
        ? new Endpoint(DEFAULT_JDBC_URL, DEFAULT_USER, "", "default")
        : endpoint(envUrl.trim(), envUser == null ? DEFAULT_USER : envUser, envPassword == null ? "" : envPassword);
    synchronized (SERVER_LOCK) {
      String known = SERVER_FAILURES.get(server.url);
      if (known != null) {
        throw new TestkitException(known);
      }
      try (Connection ignored = connect(server, server.url(null))) {
        return server;
      } catch (SQLException e) {
        TestkitException failure = failure(server, e);
        if (isUnreachable(e)) {
          SERVER_FAILURES.put(server.url, failure.getMessage());
        }
        throw failure;
      }
    }
  }

  static Endpoint endpoint(String url, String user, String password) {
    if (!URL.matcher(url).matches()) {
      throw new TestkitException(ENV_URL + " must be a jdbc:mariadb:// or jdbc:mysql:// URL, like "
          + DEFAULT_JDBC_URL + ", but was " + url);
    }
    return new Endpoint(url, user, password, ENV_URL);
  }

  private static Connection connect(Endpoint server, String url) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", server.user);
    if (!server.password.isEmpty()) {
      props.setProperty("password", server.password);
    }
    // bounds the TCP connect and the handshake: a server that is down fails fast, never hangs
    props.setProperty("connectTimeout", Long.toString(CONNECT_TIMEOUT.toMillis()));
    props.setProperty("socketTimeout", Long.toString(Duration.ofMinutes(2).toMillis()));
    props.setProperty("permitMysqlScheme", "true");
    return DriverManager.getConnection(url, props);
  }

  private static boolean isUnreachable(SQLException e) {
    String state = e.getSQLState();
    return state != null && state.startsWith("08");
  }

  private static TestkitException failure(Endpoint server, SQLException e) {
    if (isUnreachable(e)) {
      return new TestkitException("MariaDB is not reachable at " + server + ": " + Messages.clause(e.getMessage())
          + ". Start the local service with: " + START_HINT + " -- or point " + ENV_URL + " (and "
          + ENV_USER + ", " + ENV_PASSWORD + ") at a server you can reach.", e);
    }
    return new TestkitException("MariaDB at " + server + " failed: " + e.getMessage()
        + " [SQL state " + e.getSQLState() + ", error " + e.getErrorCode() + "]", e);
  }

  /** Where the server is; {@link #toString()} never prints the password. */
  static final class Endpoint {
    private final String url;
    private final String user;
    private final String password;
    private final String source;

    Endpoint(String url, String user, String password, String source) {
      this.url = url;
      this.user = user;
      this.password = password;
      this.source = source;
    }

    /** The base URL with its database replaced by {@code database} (or removed, for null). */
    String url(@Nullable String database) {
      Matcher m = URL.matcher(url);
      if (!m.matches()) {
        throw new TestkitException("not a MariaDB JDBC URL: " + url);
      }
      String options = m.group(3) == null ? "" : m.group(3);
      return m.group(1) + "/" + (database == null ? "" : database) + options;
    }

    @Override
    public String toString() {
      return url + " (user " + user + ", address from " + source + ")";
    }
  }
}
