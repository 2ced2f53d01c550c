package io.txbox.testkit;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the PostgreSQL server for tests: the environment, else the local service, else a
 * Testcontainers container when a Docker engine is available. Resolved once per JVM.
 */
final class PostgresServer {
  static final String ENV_URL = "TXBOX_TEST_JDBC_URL";
  static final String ENV_USER = "TXBOX_TEST_JDBC_USER";
  static final String ENV_PASSWORD = "TXBOX_TEST_JDBC_PASSWORD";
  static final String START_HINT =
      "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";

  private static final Logger log = LoggerFactory.getLogger(PostgresServer.class);
  private static final Duration DOCKER_CHECK_TIMEOUT = Duration.ofSeconds(15);

  private static final Object LOCK = new Object();
  private static @Nullable PgEndpoint resolved;
  private static @Nullable String failure;

  private PostgresServer() {}

  /** Returns the default endpoint for this JVM, resolving it on first use. */
  static PgEndpoint defaultEndpoint(Duration connectTimeout) {
    synchronized (LOCK) {
      if (resolved != null) {
        return resolved;
      }
      if (failure != null) {
        // Fail every later class just as fast, without another connect attempt.
        throw new TestkitException(failure);
      }
      try {
        resolved = resolve(connectTimeout);
        return resolved;
      } catch (TestkitException e) {
        failure = e.getMessage();
        throw e;
      }
    }
  }

  private static PgEndpoint resolve(Duration connectTimeout) {
    String envUrl = System.getenv(ENV_URL);
    if (envUrl != null && !envUrl.isBlank()) {
      String user = System.getenv().getOrDefault(ENV_USER, TestPostgres.DEFAULT_USER);
      String password = System.getenv().getOrDefault(ENV_PASSWORD, "");
      PgEndpoint endpoint = new PgEndpoint(envUrl.trim(), user, password, ENV_URL);
      probe(endpoint, connectTimeout);
      return endpoint;
    }
    PgEndpoint local =
        new PgEndpoint(TestPostgres.DEFAULT_JDBC_URL, TestPostgres.DEFAULT_USER, "", "default");
    try (Connection ignored = connect(local, local.url(), connectTimeout)) {
      return local;
    } catch (SQLException e) {
      if (!isUnreachable(e)) {
        throw failed(local, e);
      }
      String docker = DockerPostgres.availability(DOCKER_CHECK_TIMEOUT);
      if (docker == null) {
        log.info("PostgreSQL at {} is unreachable; starting a Testcontainers container",
            local.url());
        return DockerPostgres.start();
      }
      throw unreachable(local, e, "Docker: " + docker + ".");
    }
  }

  /** Connects once so that a bad address fails here, with a message, not deep in a test. */
  static void probe(PgEndpoint endpoint, Duration connectTimeout) {
    try (Connection ignored = connect(endpoint, endpoint.url(), connectTimeout)) {
      // reachable
    } catch (SQLException e) {
      throw isUnreachable(e) ? unreachable(endpoint, e, "") : failed(endpoint, e);
    }
  }

  static Connection connect(PgEndpoint endpoint, String url, Duration connectTimeout)
      throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", endpoint.user());
    if (!endpoint.password().isEmpty()) {
      props.setProperty("password", endpoint.password());
    }
    String seconds = Long.toString(Math.max(1, connectTimeout.toSeconds()));
    // connectTimeout bounds the TCP connect, loginTimeout the whole handshake: never hang.
    props.setProperty("connectTimeout", seconds);
    props.setProperty("loginTimeout", seconds);
    props.setProperty("ApplicationName", "txbox-testkit");
    return DriverManager.getConnection(url, props);
  }

  /** SQL state class 08 is "connection exception": nothing answered at that address. */
  static boolean isUnreachable(SQLException e) {
    String state = e.getSQLState();
    return state != null && state.startsWith("08");
  }

  static TestkitException unreachable(PgEndpoint endpoint, SQLException cause, String extra) {
    String message = "PostgreSQL is not reachable at " + endpoint.url() + " (user "
        + endpoint.user() + ", address from " + endpoint.source() + "): " + Messages.clause(cause.getMessage())
        + ". Start the local service with: " + START_HINT
        + " -- or point " + ENV_URL + " (and " + ENV_USER + ", " + ENV_PASSWORD
        + ") at a server you can reach." + (extra.isEmpty() ? "" : " " + extra);
    return new TestkitException(message, cause);
  }

  static TestkitException failed(PgEndpoint endpoint, SQLException cause) {
    return new TestkitException("PostgreSQL at " + endpoint.url() + " (user " + endpoint.user()
        + ", address from " + endpoint.source() + ") refused the test login: "
        + cause.getMessage() + " [SQL state " + cause.getSQLState() + "]", cause);
  }
}
