package io.txbox.testkit;

import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsProvider;
import org.junit.jupiter.params.support.ParameterDeclarations;

/**
 * One suite, run on every database txbox supports: a PostgreSQL schema ({@link TestPostgres})
 * and a MariaDB database ({@link TestMariaDb}) per test class, handed to each invocation of a
 * parameterized test as a {@link TestDatabase}.
 *
 * <pre>{@code
 * @RegisterExtension static final TestDatabases DBS = TestDatabases.perClass();
 *
 * @ParameterizedTest
 * @ArgumentsSource(TestDatabases.Each.class)
 * void receive_duplicate_isNoOp(TestDatabase db) throws SQLException {
 *   DataSource ds = db.dataSource();          // db.kind() says which database it is
 *   ...
 * }
 * }</pre>
 *
 * <p>The invocations are named after the database ({@code [1] PostgreSQL}, {@code [2] MariaDB}).
 * Both are set up in {@code beforeAll} and dropped in {@code afterAll}; if either server is down
 * the class fails at once with a {@link TestkitException} that names it and how to start it.
 * Reach one of them directly with {@link #postgres()} or {@link #mariadb()}.
 */
public final class TestDatabases implements BeforeAllCallback, AfterAllCallback {
  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(TestDatabases.class);

  private final TestPostgres postgres;
  private final TestMariaDb mariadb;

  private TestDatabases(TestPostgres postgres, TestMariaDb mariadb) {
    this.postgres = postgres;
    this.mariadb = mariadb;
  }

  /** Returns an extension with the default servers and pools of 5 connections each. */
  public static TestDatabases perClass() {
    return new TestDatabases(TestPostgres.perClass(), TestMariaDb.perClass());
  }

  /**
   * Returns an extension whose data sources hold at most {@code poolSize} connections each.
   *
   * @param poolSize maximum pool size, at least 1
   */
  public static TestDatabases perClass(int poolSize) {
    return new TestDatabases(TestPostgres.perClass(poolSize), TestMariaDb.perClass(poolSize));
  }

  /** The PostgreSQL schema of this class. */
  public TestPostgres postgres() {
    return postgres;
  }

  /** The MariaDB database of this class. */
  public TestMariaDb mariadb() {
    return mariadb;
  }

  /** Both databases, PostgreSQL first. */
  public List<TestDatabase> all() {
    return List.of(postgres, mariadb);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    postgres.beforeAll(context);
    try {
      mariadb.beforeAll(context);
    } catch (RuntimeException e) {
      postgres.afterAll(context);
      throw e;
    }
    context.getStore(NAMESPACE).put(TestDatabases.class, this);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    try {
      mariadb.afterAll(context);
    } finally {
      postgres.afterAll(context);
    }
  }

  /**
   * Arguments for {@code @ParameterizedTest}: each database of the class's registered {@link
   * TestDatabases}, named after it.
   */
  public static final class Each implements ArgumentsProvider {
    @Override
    public Stream<? extends Arguments> provideArguments(ParameterDeclarations parameters, ExtensionContext context) {
      TestDatabases dbs = context.getStore(NAMESPACE).get(TestDatabases.class, TestDatabases.class);
      if (dbs == null) {
        throw new TestkitException("@ArgumentsSource(TestDatabases.Each.class) needs a TestDatabases in the"
            + " test class: @RegisterExtension static final TestDatabases DBS = TestDatabases.perClass();");
      }
      return dbs.all().stream().map(db -> Arguments.of(Named.of(db.kind().toString(), db)));
    }
  }
}
