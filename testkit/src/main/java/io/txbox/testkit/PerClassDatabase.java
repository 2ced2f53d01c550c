package io.txbox.testkit;

import com.zaxxer.hikari.HikariDataSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;

/**
 * The lifecycle of a {@link TestDatabase} a test class owns: its schema is created in {@code
 * beforeAll} (a {@code @Nested} class shares its outer class's), more on request, a pool on it
 * on first use, and all of them are dropped in {@code afterAll} by the class that created them.
 * A subclass reaches its server, of type {@code E}, and creates and drops schemas there.
 */
abstract class PerClassDatabase<E> implements TestDatabase, BeforeAllCallback, AfterAllCallback {
  private final Logger log;
  /** What the database calls a schema, for log lines: "schema" or "database". */
  private final String noun;
  private final int poolSize;

  private final Object lock = new Object();
  volatile @Nullable E endpoint;
  volatile @Nullable String schema;
  private @Nullable String ownerId;
  private @Nullable HikariDataSource pool;
  private final List<String> schemas = new ArrayList<>();

  PerClassDatabase(Logger log, String noun, int poolSize) {
    this.log = log;
    this.noun = noun;
    this.poolSize = poolSize;
  }

  /** Finds and probes this JVM's server; throws {@link TestkitException} if it does not answer. */
  abstract E start();

  /** Creates the schema {@code name} on {@code server}; then {@link #created} records it. */
  abstract void create(E server, String name);

  /** Drops the schemas {@code names} on {@code server}, logging (not throwing) what could not be dropped. */
  abstract void drop(E server, List<String> names);

  /** Driver properties of the pool. */
  abstract Map<String, String> poolProperties();

  /** Records {@code name}, created on the server, to be dropped after the class. */
  final void created(String name) {
    synchronized (lock) {
      schemas.add(name);
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    synchronized (lock) {
      if (schema != null) {
        return; // a @Nested class inherits the outer class's schema
      }
      E server = start();
      endpoint = server;
      String name = Names.schemaName(context.getRequiredTestClass().getSimpleName());
      create(server, name);
      schema = name;
      ownerId = context.getUniqueId();
      log.debug("[{} {}] created for {} on {}", noun, name, context.getRequiredTestClass().getName(), server);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    List<String> toDrop;
    HikariDataSource toClose;
    E server;
    synchronized (lock) {
      if (schema == null || !context.getUniqueId().equals(ownerId)) {
        return;
      }
      toClose = pool;
      pool = null;
      toDrop = new ArrayList<>(schemas);
      server = Objects.requireNonNull(endpoint);
      schemas.clear();
      schema = null;
      ownerId = null;
    }
    if (toClose != null) {
      toClose.close();
    }
    drop(server, toDrop);
  }

  /** Returns this class's schema (on MariaDB a database) name: lower case, unquoted-safe, at most 63 characters. */
  @Override
  public String schema() {
    String name = schema;
    if (name == null) {
      throw notStarted();
    }
    return name;
  }

  /** Returns a JDBC URL on {@link #schema()}: unqualified table names land there. */
  @Override
  public String jdbcUrl() {
    return jdbcUrl(schema());
  }

  /**
   * Returns a HikariCP pool on {@link #jdbcUrl()}, created on first call and closed after the
   * class. Connections are opened on demand, up to the configured pool size.
   */
  @Override
  public DataSource dataSource() {
    synchronized (lock) {
      if (pool == null) {
        String name = schema();
        pool = TestPools.create(name, jdbcUrl(name), user(), password(), poolSize, poolProperties());
      }
      return pool;
    }
  }

  /**
   * Creates another empty schema (on MariaDB a database), {@code t_<hint>_<random>}, dropped
   * together with {@link #schema()} after the class. Use {@link #jdbcUrl(String)} to connect to it.
   *
   * @param hint readable part of the name; characters outside {@code [a-z0-9_]} are replaced
   * @return the new schema's name
   */
  @Override
  public String newSchema(String hint) {
    Objects.requireNonNull(hint, "hint");
    E server = server();
    String name = Names.schemaName(hint);
    create(server, name);
    return name;
  }

  /** This class's server; throws if the extension is not active. */
  final E server() {
    E server = endpoint;
    if (server == null || schema == null) {
      throw notStarted();
    }
    return server;
  }

  final IllegalStateException notStarted() {
    return new IllegalStateException(getClass().getSimpleName() + " is not active: register it as a static "
        + "@RegisterExtension field and use it from tests or @BeforeAll/@AfterAll methods");
  }
}
