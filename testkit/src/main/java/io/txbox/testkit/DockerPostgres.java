package io.txbox.testkit;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * The Testcontainers fallback. Testcontainers is an optional dependency: this class only touches
 * its types after {@link #availability} found them on the class path.
 */
final class DockerPostgres {
  static final String IMAGE = "postgres:17-alpine";
  private static final String FACTORY = "org.testcontainers.DockerClientFactory";

  private DockerPostgres() {}

  /**
   * Returns {@code null} when a Docker engine can be used, otherwise why not. Bounded by {@code
   * timeout} because Docker discovery can stall on a dead socket.
   */
  static @Nullable String availability(Duration timeout) {
    try {
      Class.forName(FACTORY, false, DockerPostgres.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return "Testcontainers is not on the class path";
    }
    CompletableFuture<Boolean> check = new CompletableFuture<>();
    Thread thread = new Thread(() -> {
      try {
        check.complete(Probe.dockerAvailable());
      } catch (Throwable t) {
        check.completeExceptionally(t);
      }
    }, "txbox-testkit-docker-check");
    thread.setDaemon(true);
    thread.start();
    try {
      return check.get(timeout.toMillis(), TimeUnit.MILLISECONDS) ? null : "no Docker engine found";
    } catch (TimeoutException e) {
      return "no answer from Docker within " + timeout.toSeconds() + " s";
    } catch (ExecutionException e) {
      return "Docker check failed: " + e.getCause();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /** Starts one container for the rest of the JVM; Testcontainers removes it at exit. */
  static PgEndpoint start() {
    return Probe.startContainer();
  }

  /** Holds the Testcontainers references so that loading DockerPostgres never needs them. */
  private static final class Probe {
    private static boolean dockerAvailable() {
      return org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
    }

    @SuppressWarnings("resource") // lives until the JVM exits; Testcontainers reaps it
    private static PgEndpoint startContainer() {
      var container = new org.testcontainers.postgresql.PostgreSQLContainer(IMAGE)
          .withDatabaseName("test");
      try {
        container.start();
      } catch (RuntimeException e) {
        throw new TestkitException("PostgreSQL: the local server is unreachable and the "
            + "Testcontainers container " + IMAGE + " did not start: " + e.getMessage(), e);
      }
      return new PgEndpoint(container.getJdbcUrl(), container.getUsername(),
          container.getPassword(), "Testcontainers " + IMAGE);
    }
  }
}
