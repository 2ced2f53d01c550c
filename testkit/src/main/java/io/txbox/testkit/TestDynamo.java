package io.txbox.testkit;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A DynamoDB-compatible server for tests: <a href="https://github.com/architect/dynalite">dynalite</a>
 * 4.0.0, an open-source implementation of the DynamoDB API, run by Node.js as a child process, in
 * memory, on a free port. One server serves the whole test run; it stops when the JVM exits.
 * Each test class gets a table-name prefix of its own.
 *
 * <pre>{@code
 * @RegisterExtension static final TestDynamo DYNAMO = TestDynamo.perClass();
 *
 * DynamoDbClient client = DynamoDbClient.builder().endpointOverride(DYNAMO.endpoint())
 *     .region(Region.US_EAST_1).credentialsProvider(...any static credentials...).build();
 * }</pre>
 *
 * <p>dynalite is installed from {@code testkit/dynalite/package-lock.json} by {@code npm ci}
 * (the CI script does it). When {@code testkit/dynalite/node_modules} is missing, or holds a
 * dynalite without the current {@code TransactWriteItems} extension, the first start runs
 * {@code npm ci} there itself. {@code TXBOX_TEST_DYNAMO_ENDPOINT} names a running
 * server instead (then nothing is started). A server that does not answer within
 * {@link #START_TIMEOUT} fails the class with a {@link TestkitException} that says what to do.
 *
 * <p>dynalite does not implement {@code TransactWriteItems} itself: {@code testkit/dynalite/transact}
 * adds it on install, built from dynalite's own item operations (its README says what it does not
 * model). dynalite is not DynamoDB: it does not implement {@code UpdateTimeToLive} (TTL never
 * deletes), and it enforces neither throughput nor every limit.
 */
public final class TestDynamo implements BeforeAllCallback {
  /** The dynalite version the lock file pins. */
  public static final String DYNALITE_VERSION = "4.0.0";
  /** How long a dynalite server may take to open its port. */
  public static final Duration START_TIMEOUT = Duration.ofSeconds(30);

  private static final Object SHARED_LOCK = new Object();
  private static @Nullable Server shared;

  private volatile @Nullable String prefix;
  private volatile @Nullable URI endpoint;

  private TestDynamo() {}

  /** The extension: the run's shared server and a table-name prefix for the class. */
  public static TestDynamo perClass() {
    return new TestDynamo();
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (prefix != null) {
      return; // a @Nested class shares the outer class's prefix
    }
    endpoint = sharedEndpoint();
    prefix = "t_" + Names.classId(context.getRequiredTestClass()).replace('-', '_') + "_";
  }

  /** The server's endpoint, {@code http://127.0.0.1:<port>}. */
  public URI endpoint() {
    URI e = endpoint;
    if (e == null) {
      throw new IllegalStateException("TestDynamo is not started: register it as a static @RegisterExtension field");
    }
    return e;
  }

  /** This class's table-name prefix, {@code t_<class>_<random>_}; only {@code [a-z0-9_]}. */
  public String prefix() {
    String p = prefix;
    if (p == null) {
      throw new IllegalStateException("TestDynamo is not started: register it as a static @RegisterExtension field");
    }
    return p;
  }

  /** A table name of this class: {@link #prefix()} followed by {@code name}. */
  public String table(String name) {
    return prefix() + name;
  }

  private static URI sharedEndpoint() {
    String env = System.getenv("TXBOX_TEST_DYNAMO_ENDPOINT");
    if (env != null && !env.isBlank()) {
      return URI.create(env);
    }
    synchronized (SHARED_LOCK) {
      if (shared == null || !shared.alive()) {
        Server s = startPrivate();
        Runtime.getRuntime().addShutdownHook(new Thread(s::close, "txbox-dynalite-stop"));
        shared = s;
      }
      return shared.endpoint();
    }
  }

  /**
   * Starts a dynalite server of the caller's own, for tests that stop it (a server that goes
   * away mid-run). The caller closes it.
   */
  public static Server startPrivate() {
    Path dir = dynaliteDir();
    Path cli = dir.resolve("node_modules/dynalite/cli.js");
    if (!Files.isRegularFile(cli) || !transactInstalled(dir)) {
      npmCi(dir);
    }
    int port = freePort();
    Path log = dir.resolve("dynalite-" + port + ".log");
    ProcessBuilder pb = new ProcessBuilder(node(), cli.toString(), "--port", Integer.toString(port), "--host", "127.0.0.1")
        .directory(dir.toFile())
        .redirectErrorStream(true)
        .redirectOutput(log.toFile());
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new TestkitException("could not start dynalite with " + node() + " (" + e.getMessage()
          + "). Install Node.js 20 or later, or set TXBOX_NODE to the node executable.", e);
    }
    Server server = new Server(p, URI.create("http://127.0.0.1:" + port), log);
    try {
      Poll.until(START_TIMEOUT, Duration.ofMillis(50), () -> {
        if (!p.isAlive()) {
          throw new TestkitException("dynalite exited with status " + p.exitValue() + "; see " + log);
        }
        return portOpen(port);
      }, () -> "dynalite did not open port " + port + " within " + START_TIMEOUT.toSeconds() + " s; see " + log + ".");
    } catch (RuntimeException e) {
      server.close();
      throw e;
    }
    return server;
  }

  /**
   * Whether node_modules holds the current TransactWriteItems extension: an install from before
   * it, or from an older copy of it, is replaced by npm ci.
   */
  private static boolean transactInstalled(Path dir) {
    for (String file : List.of("actions/transactWriteItems.js", "validations/transactWriteItems.js")) {
      Path installed = dir.resolve("node_modules/dynalite").resolve(file);
      try {
        if (!Files.isRegularFile(installed) || Files.mismatch(dir.resolve("transact").resolve(file), installed) != -1) {
          return false;
        }
      } catch (IOException e) {
        return false;
      }
    }
    return true;
  }

  private static String node() {
    String env = System.getenv("TXBOX_NODE");
    return env == null || env.isBlank() ? "node" : env;
  }

  private static Path dynaliteDir() {
    String root = System.getProperty(SharedBroker.PROJECT_ROOT_PROPERTY);
    List<Path> candidates = root == null
        ? List.of(Path.of("testkit", "dynalite"), Path.of("..", "testkit", "dynalite"))
        : List.of(Path.of(root, "testkit", "dynalite"));
    for (Path c : candidates) {
      if (Files.isRegularFile(c.resolve("package-lock.json"))) {
        return c.toAbsolutePath().normalize();
      }
    }
    throw new TestkitException("testkit/dynalite/package-lock.json not found (looked in " + candidates
        + "); run the tests from the txbox checkout or set TXBOX_TEST_DYNAMO_ENDPOINT to a running server");
  }

  private static void npmCi(Path dir) {
    String fix = "Run `npm ci --prefix " + dir + "` (Node.js 20 or later), or set TXBOX_TEST_DYNAMO_ENDPOINT"
        + " to a running server.";
    try {
      Process p = new ProcessBuilder("npm", "ci", "--no-audit", "--no-fund")
          .directory(dir.toFile())
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("npm-ci.log").toFile())
          .start();
      if (!p.waitFor(5, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new TestkitException("npm ci in " + dir + " took more than 5 minutes. " + fix);
      }
      if (p.exitValue() != 0) {
        throw new TestkitException("npm ci in " + dir + " failed (see npm-ci.log there). " + fix);
      }
    } catch (IOException e) {
      throw new TestkitException("dynalite is not installed and npm could not run (" + e.getMessage() + "). " + fix, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TestkitException("interrupted while installing dynalite", e);
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new TestkitException("no free local port for dynalite", e);
    }
  }

  private static boolean portOpen(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** One dynalite child process; {@link #close()} stops it and waits for it to exit. */
  public static final class Server implements AutoCloseable {
    private final Process process;
    private final URI endpoint;
    private final Path log;

    private Server(Process process, URI endpoint, Path log) {
      this.process = process;
      this.endpoint = endpoint;
      this.log = log;
    }

    /** {@code http://127.0.0.1:<port>}. */
    public URI endpoint() {
      return endpoint;
    }

    /** Whether the process still runs. */
    public boolean alive() {
      return process.isAlive();
    }

    /** Stops the server (SIGTERM, then SIGKILL after 5 s) and deletes its log. */
    @Override
    public void close() {
      process.destroy();
      try {
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      try {
        Files.deleteIfExists(log);
      } catch (IOException e) {
        // a leftover log harms no one
      }
    }
  }
}
