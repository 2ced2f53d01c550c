package io.txbox.testkit;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.PossibleAuthenticationFailureException;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A RabbitMQ node for a test class: names no other class uses, connections that recover, and
 * clean-up, after the class, of every queue and exchange named by {@link #name(String)} or
 * {@link #track(String)}.
 *
 * <pre>{@code
 * @RegisterExtension static final TestRabbit RABBIT = TestRabbit.perClass();
 *
 * @Test void publishes() throws Exception {
 *   String queue = RABBIT.name("orders");                // orders-<class id>, deleted afterAll
 *   try (Connection c = RABBIT.newConnection(); Channel ch = c.createChannel()) { ... }
 * }
 * }</pre>
 *
 * <p>The node is the one named by {@code TXBOX_TEST_AMQP_URI}, else {@value #DEFAULT_URI}; a URI
 * without a virtual host means the default one, "/". The
 * class is isolated by names, not by a virtual host: use {@link #name(String)} for every queue and
 * exchange. {@code beforeAll} fails within the connect timeout if the node does not answer.
 */
public final class TestRabbit implements BeforeAllCallback, AfterAllCallback {
  /** The node used when the environment names none. */
  public static final String DEFAULT_URI = "amqp://guest:guest@127.0.0.1:5672/%2f";
  /** Environment variable that overrides {@link #DEFAULT_URI}. */
  public static final String ENV_URI = "TXBOX_TEST_AMQP_URI";
  /** How long to wait for the node before failing the class: 5 s. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
  /** How long {@link #startApp()} waits for the node to accept connections again: 60 s. */
  public static final Duration DEFAULT_RESTART_TIMEOUT = Duration.ofSeconds(60);
  /** The command that controls the node, run by {@link #stopApp()} and {@link #startApp()}. */
  public static final List<String> DEFAULT_RABBITMQCTL = List.of("rabbitmqctl");

  private static final Logger log = LoggerFactory.getLogger(TestRabbit.class);
  private static final String START_HINT = "rabbitmq-server -detached";
  private static final int RECOVERY_INTERVAL_MILLIS = 1000;

  private final @Nullable String fixedUri;
  private final Duration connectTimeout;
  private final Duration restartTimeout;
  private final List<String> rabbitmqctl;

  private final Set<String> names = ConcurrentHashMap.newKeySet();
  private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
  private volatile @Nullable String uri;
  private volatile @Nullable String classId;
  private volatile boolean appStopped;
  private @Nullable String ownerId;

  private TestRabbit(Builder builder) {
    this.fixedUri = builder.uri;
    this.connectTimeout = builder.connectTimeout;
    this.restartTimeout = builder.restartTimeout;
    this.rabbitmqctl = builder.rabbitmqctl;
  }

  /** Returns an extension on the default node. */
  public static TestRabbit perClass() {
    return builder().build();
  }

  /** Returns a builder for another node, timeouts or control command. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public synchronized void beforeAll(ExtensionContext context) {
    if (classId != null) {
      return; // a @Nested class shares the outer class's names
    }
    String address = fixedUri;
    String source = "TestRabbit.builder()";
    if (address == null) {
      String env = System.getenv(ENV_URI);
      boolean fromEnv = env != null && !env.isBlank();
      address = fromEnv ? env.trim() : DEFAULT_URI;
      source = fromEnv ? ENV_URI : "default";
    }
    address = withDefaultVirtualHost(address);
    ConnectionFactory probe = factory(address);
    probe.setAutomaticRecoveryEnabled(false);
    try (Connection ignored = probe.newConnection("txbox-testkit-probe")) {
      // reachable
    } catch (IOException | TimeoutException e) {
      throw unreachable(address, source, e);
    }
    uri = address;
    classId = Names.classId(context.getRequiredTestClass());
    ownerId = context.getUniqueId();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    synchronized (this) {
      if (classId == null || !context.getUniqueId().equals(ownerId)) {
        return;
      }
    }
    try {
      if (appStopped) {
        startApp(); // a fault test failed half-way: leave the node as we found it
      }
      for (Connection connection : connections) {
        closeQuietly(connection);
      }
      connections.clear();
      deleteNamed();
    } finally {
      synchronized (this) {
        classId = null;
        ownerId = null;
        names.clear();
      }
    }
  }

  /**
   * Returns the AMQP URI of the node, including credentials, ready for any AMQP client: a URI
   * that names no virtual host gets {@code /%2f}, the default virtual host "/".
   */
  public String uri() {
    String current = uri;
    if (current == null) {
      throw notStarted();
    }
    return current;
  }

  /**
   * Returns {@code <hint>-<class id>}: the same name for the same hint within this class, and a
   * different one in every other class. Queues and exchanges with this name are deleted after the
   * class.
   *
   * @param hint readable part of the name
   */
  public String name(String hint) {
    Objects.requireNonNull(hint, "hint");
    String id = classId;
    if (id == null) {
      throw notStarted();
    }
    String name = hint + "-" + id;
    names.add(name);
    return name;
  }

  /**
   * Deletes the queue or exchange {@code name} after the class as well, like the names from
   * {@link #name(String)}: for what a test or a library declares under a name derived from one,
   * such as a consumer's dead-letter queue {@code <queue>.dead-letter} or an exchange {@code
   * <name>-dlx}. Deleting a name that was never declared is harmless.
   *
   * @param name the exact queue or exchange name
   * @return {@code name}
   */
  public String track(String name) {
    Objects.requireNonNull(name, "name");
    if (classId == null) {
      throw notStarted();
    }
    if (name.isEmpty() || name.startsWith("amq.")) {
      throw new IllegalArgumentException("cannot track " + (name.isEmpty() ? "the default exchange"
          : "the built-in " + name) + ": only names a test declares are deleted");
    }
    names.add(name);
    return name;
  }

  /**
   * Returns a new connection factory for the node, with automatic connection and topology
   * recovery on (retrying every second) and the connect timeout of this extension.
   */
  public ConnectionFactory connectionFactory() {
    return factory(uri());
  }

  /**
   * Opens a connection from {@link #connectionFactory()}; it is closed after the class if the
   * test has not closed it.
   *
   * @throws TestkitException if the node does not answer
   */
  public Connection newConnection() {
    String id = classId;
    try {
      Connection connection = connectionFactory().newConnection("txbox-test-" + id);
      connections.add(connection);
      return connection;
    } catch (IOException | TimeoutException e) {
      throw unreachable(uri(), "this extension", e);
    }
  }

  /**
   * Stops the RabbitMQ application on the node ({@code rabbitmqctl stop_app}); the Erlang VM
   * keeps running. Returns once the AMQP port refuses connections. Connections from {@link
   * #connectionFactory()} start recovering. Affects every client of the node, so use it only in
   * tests that own the node. If the class ends with the application stopped, {@code afterAll}
   * starts it.
   *
   * @throws TestkitException if the command fails or the port stays open
   */
  public void stopApp() {
    runCtl("stop_app");
    appStopped = true;
    URI address = parse(uri());
    Poll.until(Duration.ofSeconds(30), Duration.ofMillis(100),
        () -> !portAnswers(address), () -> "RabbitMQ port " + hostPort(address)
            + " still accepts connections after stop_app.");
    log.info("[rabbitmq {}] application stopped", hostPort(address));
  }

  /**
   * Starts the RabbitMQ application again ({@code rabbitmqctl start_app}) and returns once the
   * node accepts an AMQP connection.
   *
   * @throws TestkitException if it does not within the restart timeout
   */
  public void startApp() {
    long start = System.nanoTime();
    runCtl("start_app");
    URI address = parse(uri());
    ConnectionFactory probe = factory(uri());
    probe.setAutomaticRecoveryEnabled(false);
    Poll.until(restartTimeout, Duration.ofMillis(200), () -> {
      if (!portAnswers(address)) {
        return false;
      }
      try (Connection ignored = probe.newConnection("txbox-testkit-probe")) {
        return true;
      }
    }, () -> "RabbitMQ at " + hostPort(address) + " does not accept connections "
        + restartTimeout.toSeconds() + " s after start_app.");
    appStopped = false;
    log.info("[rabbitmq {}] application started in {} ms", hostPort(address),
        (System.nanoTime() - start) / 1_000_000);
  }

  @Override
  public String toString() {
    String current = uri;
    return "TestRabbit[" + (current == null ? "-" : redact(current)) + ", classId=" + classId
        + "]";
  }

  private ConnectionFactory factory(String address) {
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(address);
    } catch (URISyntaxException | GeneralSecurityException | IllegalArgumentException e) {
      throw new TestkitException("RabbitMQ: invalid AMQP URI " + redact(address) + ": "
          + e.getMessage(), e);
    }
    factory.setAutomaticRecoveryEnabled(true);
    factory.setTopologyRecoveryEnabled(true);
    // Tests wait for recovery: retry every second instead of the client's default 5 s.
    factory.setNetworkRecoveryInterval(RECOVERY_INTERVAL_MILLIS);
    factory.setConnectionTimeout((int) connectTimeout.toMillis());
    factory.setHandshakeTimeout((int) connectTimeout.toMillis());
    return factory;
  }

  /**
   * {@code address} with {@code /%2f} (the virtual host "/") when it names none: a URI ending in
   * {@code :5672/} names the empty virtual host, which RabbitMQ does not have, so {@link #uri()}
   * would fail wherever it is passed on.
   */
  static String withDefaultVirtualHost(String address) {
    URI parsed = parse(address);
    String path = parsed.getRawPath();
    if (path != null && !path.isEmpty() && !path.equals("/")) {
      return address;
    }
    return parsed.getScheme() + "://" + parsed.getRawAuthority() + "/%2f"
        + (parsed.getRawQuery() == null ? "" : "?" + parsed.getRawQuery());
  }

  private void deleteNamed() {
    if (names.isEmpty()) {
      return;
    }
    ConnectionFactory factory = connectionFactory();
    factory.setAutomaticRecoveryEnabled(false);
    try (Connection connection = factory.newConnection("txbox-testkit-cleanup")) {
      Channel channel = connection.createChannel();
      for (String name : names) {
        // Deleting a queue or exchange that does not exist succeeds, but any other error closes
        // the channel: open a new one and go on.
        for (boolean queue : new boolean[] {true, false}) {
          try {
            if (!channel.isOpen()) {
              channel = connection.createChannel();
            }
            if (queue) {
              channel.queueDelete(name);
            } else {
              channel.exchangeDelete(name);
            }
          } catch (IOException | RuntimeException e) {
            log.debug("[rabbitmq {}] cannot delete {}: {}", redact(uri()), name, e.toString());
          }
        }
      }
    } catch (IOException | TimeoutException e) {
      log.warn("[rabbitmq {}] could not delete {}: {}", redact(uri()), names, e.toString());
    }
  }

  /**
   * Closes, from the broker's side, every connection whose client named it {@code
   * connectionName} ({@code rabbitmqctl close_connection}), as a network loss would end it. Waits
   * up to 30 s for such a connection to show up. Unlike {@link #stopApp()} it touches only these
   * connections, so it is safe on a shared node.
   *
   * @return how many connections were closed, at least one
   * @throws TestkitException if rabbitmqctl fails (with its output and exit code), or no
   *     connection of that name appears
   */
  public int closeConnections(String connectionName) {
    List<String> pids = new ArrayList<>();
    Poll.until(Duration.ofSeconds(30), Duration.ofMillis(300), () -> {
      pids.clear();
      String marker = "{\"connection_name\",\"" + connectionName + "\"}";
      for (String line : runCtl("-q", "list_connections", "--no-table-headers", "pid",
          "client_properties").split("\n")) {
        if (line.contains(marker) && line.indexOf('\t') > 0) {
          pids.add(line.substring(0, line.indexOf('\t')));
        }
      }
      return !pids.isEmpty();
    }, () -> "RabbitMQ: no connection named " + connectionName + " to close.");
    for (String pid : pids) {
      runCtl("-q", "close_connection", pid, "txbox-testkit: simulated connection loss");
    }
    log.info("[rabbitmq {}] closed {} connection(s) named {}", redact(uri()), pids.size(),
        connectionName);
    return pids.size();
  }

  private String runCtl(String... args) {
    List<String> command = new ArrayList<>(rabbitmqctl);
    command.addAll(List.of(args));
    Path output = null;
    try {
      output = Files.createTempFile("txbox-rabbitmqctl-", ".log");
      Process process = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(output.toFile()).start();
      if (!process.waitFor(restartTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        throw new TestkitException("RabbitMQ: " + String.join(" ", command)
            + " did not finish within " + restartTimeout.toSeconds() + " s");
      }
      String text = Files.readString(output, StandardCharsets.UTF_8).strip();
      if (process.exitValue() != 0) {
        throw new TestkitException("RabbitMQ: " + String.join(" ", command) + " failed with exit "
            + "code " + process.exitValue() + ": " + text + " (it must run as root or the "
            + "rabbitmq user, on the node's machine)");
      }
      return text;
    } catch (IOException e) {
      throw new TestkitException("RabbitMQ: cannot run " + String.join(" ", command) + ": "
          + e.getMessage() + " (is rabbitmqctl on the PATH?)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TestkitException("Interrupted while running " + String.join(" ", command), e);
    } finally {
      if (output != null) {
        try {
          Files.deleteIfExists(output);
        } catch (IOException e) {
          // a temp file
        }
      }
    }
  }

  private TestkitException unreachable(String address, String source, Exception cause) {
    String detail = rootMessage(cause);
    if (answered(cause)) {
      return new TestkitException("RabbitMQ at " + redact(address) + " (address from " + source
          + ") refused the connection: " + detail + ". Check the user, password and virtual host"
          + " in the URI, or point " + ENV_URI + " at another node.", cause);
    }
    return new TestkitException("RabbitMQ is not reachable at " + redact(address)
        + " (address from " + source + "): " + detail + ". Start it with: " + START_HINT
        + " -- or point " + ENV_URI + " at a node you can reach.", cause);
  }

  /** A shutdown signal or an authentication failure means the node answered and said no. */
  private static boolean answered(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof ShutdownSignalException
          || t instanceof PossibleAuthenticationFailureException) {
        return true;
      }
    }
    return false;
  }

  private static String rootMessage(Throwable error) {
    Throwable root = error;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() == null ? root.getClass().getSimpleName()
        : root.getClass().getSimpleName() + ": " + Messages.clause(root.getMessage());
  }

  private boolean portAnswers(URI address) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(address.getHost(), port(address)),
          (int) connectTimeout.toMillis());
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static URI parse(String address) {
    try {
      return new URI(address);
    } catch (URISyntaxException e) {
      throw new TestkitException("RabbitMQ: invalid AMQP URI " + redact(address), e);
    }
  }

  private static int port(URI address) {
    if (address.getPort() > 0) {
      return address.getPort();
    }
    return "amqps".equalsIgnoreCase(address.getScheme()) ? 5671 : 5672;
  }

  private static String hostPort(URI address) {
    return address.getHost() + ":" + port(address);
  }

  /** Drops the password: URIs end up in logs and failure messages. */
  static String redact(String address) {
    try {
      URI parsed = new URI(address);
      String userInfo = parsed.getRawUserInfo();
      if (userInfo == null || !userInfo.contains(":")) {
        return address;
      }
      String user = userInfo.substring(0, userInfo.indexOf(':'));
      // raw parts: a decoded path would turn the virtual host %2f into a second slash
      return parsed.getScheme() + "://" + user + "@"
          + parsed.getRawAuthority().substring(parsed.getRawAuthority().lastIndexOf('@') + 1)
          + (parsed.getRawPath() == null ? "" : parsed.getRawPath())
          + (parsed.getRawQuery() == null ? "" : "?" + parsed.getRawQuery());
    } catch (URISyntaxException e) {
      return "(unparseable URI)";
    }
  }

  private static void closeQuietly(Connection connection) {
    try {
      if (connection.isOpen()) {
        connection.close(2000);
      }
    } catch (IOException | RuntimeException e) {
      // the node may be gone; nothing left to release
    }
  }

  private static IllegalStateException notStarted() {
    return new IllegalStateException("TestRabbit is not active: register it as a static "
        + "@RegisterExtension field");
  }

  /** Configures a {@link TestRabbit}. Each setter checks its argument at once. */
  public static final class Builder {
    private @Nullable String uri;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private Duration restartTimeout = DEFAULT_RESTART_TIMEOUT;
    private List<String> rabbitmqctl = DEFAULT_RABBITMQCTL;

    private Builder() {}

    /**
     * Uses this node instead of {@code TXBOX_TEST_AMQP_URI} or {@link #DEFAULT_URI}. Default:
     * not set.
     *
     * @param uri an {@code amqp://} or {@code amqps://} URI
     */
    public Builder uri(String uri) {
      Objects.requireNonNull(uri, "uri");
      if (!uri.startsWith("amqp://") && !uri.startsWith("amqps://")) {
        throw new IllegalArgumentException("uri must start with amqp:// or amqps:// but was "
            + redact(uri));
      }
      this.uri = uri;
      return this;
    }

    /** How long to wait for the node to answer. Default {@link #DEFAULT_CONNECT_TIMEOUT}. */
    public Builder connectTimeout(Duration connectTimeout) {
      Objects.requireNonNull(connectTimeout, "connectTimeout");
      if (connectTimeout.toMillis() < 100 || connectTimeout.toSeconds() > 60) {
        throw new IllegalArgumentException(
            "connectTimeout must be between 100 ms and 60 s but was " + connectTimeout);
      }
      this.connectTimeout = connectTimeout;
      return this;
    }

    /**
     * How long {@link #startApp()} waits for the node. Default {@link #DEFAULT_RESTART_TIMEOUT}.
     */
    public Builder restartTimeout(Duration restartTimeout) {
      Objects.requireNonNull(restartTimeout, "restartTimeout");
      if (restartTimeout.isNegative() || restartTimeout.isZero()) {
        throw new IllegalArgumentException("restartTimeout must be positive but was "
            + restartTimeout);
      }
      this.restartTimeout = restartTimeout;
      return this;
    }

    /**
     * The command, without its action, that controls the node, such as {@code ["sudo",
     * "rabbitmqctl"]} or {@code ["docker", "exec", "rabbit", "rabbitmqctl"]}. Default {@link
     * #DEFAULT_RABBITMQCTL}.
     */
    public Builder rabbitmqctl(List<String> command) {
      Objects.requireNonNull(command, "command");
      if (command.isEmpty()) {
        throw new IllegalArgumentException("rabbitmqctl command must not be empty");
      }
      this.rabbitmqctl = List.copyOf(command);
      return this;
    }

    /** Returns the extension; register it as a static {@code @RegisterExtension} field. */
    public TestRabbit build() {
      return new TestRabbit(this);
    }
  }
}
