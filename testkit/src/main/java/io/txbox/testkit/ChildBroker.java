package io.txbox.testkit;

import io.txbox.testkit.kafka.BrokerMain;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One single-node KRaft broker (broker and controller in one process) running {@link BrokerMain}
 * in a child JVM. Its ports, data and logs live in one directory, so a restart finds them again.
 */
final class ChildBroker {
  static final String HOST = "127.0.0.1";
  private static final Logger log = LoggerFactory.getLogger(ChildBroker.class);
  private static final int LOG_TAIL_LINES = 40;

  /** What keeps the broker alive: its owner process, or a file touched by client JVMs. */
  sealed interface Watch permits OwnerWatch, AliveFileWatch {}

  record OwnerWatch(long pid) implements Watch {}

  /** {@code record} is the lease record the broker removes when it exits for being idle. */
  record AliveFileWatch(Path file, Duration idleTimeout, Path record) implements Watch {}

  private final Path dir;
  private final int brokerPort;
  private final int controllerPort;
  private final String clusterId;
  private final List<String> jvmOptions;
  private final Duration startTimeout;
  private final Watch watch;
  private @Nullable Process process;

  private ChildBroker(Path dir, int brokerPort, int controllerPort, String clusterId,
      List<String> jvmOptions, Duration startTimeout, Watch watch) {
    this.dir = dir;
    this.brokerPort = brokerPort;
    this.controllerPort = controllerPort;
    this.clusterId = clusterId;
    this.jvmOptions = List.copyOf(jvmOptions);
    this.startTimeout = startTimeout;
    this.watch = watch;
  }

  /**
   * Writes the configuration into {@code dir} and starts the broker on free ports, retrying with
   * new ports if another process took one in between.
   */
  static ChildBroker launch(Path dir, List<String> jvmOptions, Map<String, String> overrides,
      Duration startTimeout, Watch watch) {
    TestkitException last = null;
    for (int attempt = 1; attempt <= 3; attempt++) {
      int brokerPort = freePort();
      int controllerPort = freePort();
      while (controllerPort == brokerPort) {
        controllerPort = freePort();
      }
      ChildBroker broker = new ChildBroker(dir, brokerPort, controllerPort,
          Uuid.randomUuid().toString(), jvmOptions, startTimeout, watch);
      broker.writeConfig(overrides);
      try {
        broker.start();
        return broker;
      } catch (TestkitException e) {
        last = e;
        if (!broker.logContains("Address already in use")) {
          throw e;
        }
        log.info("[kafka {}] port taken while starting, retrying on new ports", dir);
        broker.deleteData();
      }
    }
    throw last;
  }

  String bootstrapServers() {
    return HOST + ":" + brokerPort;
  }

  Path dir() {
    return dir;
  }

  Path logFile() {
    return dir.resolve("broker.log");
  }

  int brokerPort() {
    return brokerPort;
  }

  int controllerPort() {
    return controllerPort;
  }

  synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  synchronized long pid() {
    if (process == null) {
      throw new IllegalStateException("broker " + bootstrapServers() + " was never started");
    }
    return process.pid();
  }

  /** Starts the child JVM and waits until the broker answers metadata requests. */
  synchronized void start() {
    if (isRunning()) {
      throw new IllegalStateException("broker " + bootstrapServers() + " is already running");
    }
    List<String> command = command();
    ProcessBuilder builder = new ProcessBuilder(command)
        .directory(dir.toFile())
        .redirectErrorStream(true)
        // A file, never the test JVM's streams: CI pipes must not wait for the broker.
        .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()));
    File devNull = new File("/dev/null");
    if (devNull.exists()) {
      builder.redirectInput(ProcessBuilder.Redirect.from(devNull));
    }
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new TestkitException("Kafka: could not run " + String.join(" ", command) + ": "
          + e.getMessage(), e);
    }
    log.debug("[kafka {}] started pid {}: {}", bootstrapServers(), process.pid(), command);
    awaitReady(process, command);
  }

  /** Sends SIGTERM and waits for a clean shutdown; kills the process if that takes too long. */
  synchronized void stop(Duration timeout) {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    p.destroy();
    if (!waitFor(p, timeout)) {
      log.warn("[kafka {}] did not stop within {} s, killing pid {}", bootstrapServers(),
          timeout.toSeconds(), p.pid());
      kill();
    }
  }

  /** Sends SIGKILL and waits until the process is gone. */
  synchronized void kill() {
    Process p = process;
    if (p == null) {
      return;
    }
    p.destroyForcibly();
    if (!waitFor(p, Duration.ofSeconds(30))) {
      throw new TestkitException("Kafka: broker pid " + p.pid() + " survived SIGKILL for 30 s");
    }
  }

  void deleteData() {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(path -> {
        try {
          Files.deleteIfExists(path);
        } catch (IOException e) {
          // best effort: a leftover temp file is harmless
        }
      });
    } catch (IOException | UncheckedIOException e) {
      log.debug("[kafka {}] could not delete {}: {}", bootstrapServers(), dir, e.toString());
    }
  }

  /** Returns the last lines of the broker's log, for failure messages. */
  String logTail() {
    Path file = logFile();
    if (!Files.exists(file)) {
      return "(no log at " + file + ")";
    }
    Deque<String> tail = new ArrayDeque<>();
    try (Stream<String> lines = Files.lines(file, StandardCharsets.UTF_8)) {
      lines.forEach(line -> {
        tail.addLast(line);
        if (tail.size() > LOG_TAIL_LINES) {
          tail.removeFirst();
        }
      });
    } catch (IOException | UncheckedIOException e) {
      return "(cannot read " + file + ": " + e + ")";
    }
    return String.join(System.lineSeparator(), tail);
  }

  private boolean logContains(String text) {
    try (Stream<String> lines = Files.lines(logFile(), StandardCharsets.UTF_8)) {
      return lines.anyMatch(line -> line.contains(text));
    } catch (IOException | UncheckedIOException e) {
      return false;
    }
  }

  private void awaitReady(Process p, List<String> command) {
    long start = System.nanoTime();
    long deadline = start + startTimeout.toNanos();
    Properties config = new Properties();
    config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    config.put(AdminClientConfig.CLIENT_ID_CONFIG, "txbox-testkit-readiness");
    config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
    config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3000");
    config.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
    config.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "100");
    String lastError = "no answer yet";
    Admin admin = null;
    try {
      while (System.nanoTime() - deadline < 0) {
        if (!p.isAlive()) {
          throw startFailure(command, "the broker JVM exited with code " + p.exitValue());
        }
        // The client is created only once the port answers: it would log every refused connect.
        if (admin == null && portAnswers(brokerPort)) {
          admin = Admin.create(config);
        }
        if (admin != null) {
          try {
            Collection<?> nodes = admin.describeCluster().nodes().get(3, TimeUnit.SECONDS);
            if (!nodes.isEmpty()) {
              log.debug("[kafka {}] ready after {} ms", bootstrapServers(),
                  (System.nanoTime() - start) / 1_000_000);
              return;
            }
          } catch (ExecutionException | TimeoutException e) {
            lastError = e.toString();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new TestkitException("Kafka: interrupted while waiting for the broker", e);
          }
        }
        Poll.sleep(Duration.ofMillis(100));
      }
    } finally {
      if (admin != null) {
        admin.close(Duration.ZERO);
      }
    }
    p.destroyForcibly();
    throw startFailure(command, "not ready within " + startTimeout.toSeconds() + " s ("
        + lastError + ")");
  }

  private TestkitException startFailure(List<String> command, String why) {
    return new TestkitException("Kafka broker at " + bootstrapServers() + " did not start: "
        + why + System.lineSeparator() + "Command: " + String.join(" ", command)
        + System.lineSeparator() + "Log " + logFile() + " ends with:" + System.lineSeparator()
        + logTail());
  }

  private List<String> command() {
    List<String> command = new ArrayList<>();
    command.add(javaExecutable());
    command.addAll(jvmOptions);
    command.add("-Dlogback.configurationFile=" + dir.resolve("logback.xml"));
    command.add("-Dlog4j2.configurationFile=" + dir.resolve("log4j2.properties"));
    if (watch instanceof OwnerWatch owner) {
      command.add("-D" + BrokerMain.OWNER_PID + "=" + owner.pid());
    } else if (watch instanceof AliveFileWatch alive) {
      command.add("-D" + BrokerMain.ALIVE_FILE + "=" + alive.file());
      command.add("-D" + BrokerMain.IDLE_TIMEOUT_MILLIS + "=" + alive.idleTimeout().toMillis());
      command.add("-D" + BrokerMain.LEASE_RECORD + "=" + alive.record());
    }
    // An argument file keeps the long class path out of ps output and error messages.
    command.add("@" + dir.resolve("classpath.args"));
    command.add(BrokerMain.class.getName());
    command.add(dir.resolve("server.properties").toString());
    command.add(clusterId);
    return command;
  }

  private static String javaExecutable() {
    Path java = Path.of(System.getProperty("java.home"), "bin",
        File.separatorChar == '\\' ? "java.exe" : "java");
    if (Files.isExecutable(java)) {
      return java.toString();
    }
    return ProcessHandle.current().info().command().orElse("java");
  }

  private void writeConfig(Map<String, String> overrides) {
    Map<String, String> props = new LinkedHashMap<>();
    props.put("process.roles", "broker,controller");
    props.put("node.id", "1");
    props.put("controller.quorum.bootstrap.servers", HOST + ":" + controllerPort);
    props.put("listeners", "PLAINTEXT://" + HOST + ":" + brokerPort + ",CONTROLLER://" + HOST
        + ":" + controllerPort);
    props.put("advertised.listeners", "PLAINTEXT://" + HOST + ":" + brokerPort);
    props.put("controller.listener.names", "CONTROLLER");
    props.put("inter.broker.listener.name", "PLAINTEXT");
    props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    props.put("log.dirs", dir.resolve("data").toString());
    props.put("num.partitions", "4");
    props.put("default.replication.factor", "1");
    props.put("min.insync.replicas", "1");
    props.put("offsets.topic.replication.factor", "1");
    props.put("offsets.topic.num.partitions", "4");
    props.put("transaction.state.log.replication.factor", "1");
    props.put("transaction.state.log.min.isr", "1");
    props.put("transaction.state.log.num.partitions", "4");
    props.put("share.coordinator.state.topic.replication.factor", "1");
    props.put("share.coordinator.state.topic.min.isr", "1");
    props.put("group.initial.rebalance.delay.ms", "0");
    props.put("auto.create.topics.enable", "true");
    props.put("delete.topic.enable", "true");
    // Sized for a test machine, not for throughput.
    props.put("num.network.threads", "2");
    props.put("num.io.threads", "2");
    props.put("num.recovery.threads.per.data.dir", "1");
    props.put("log.cleaner.dedupe.buffer.size", Integer.toString(8 * 1024 * 1024));
    props.putAll(overrides);

    String classpath = ChildClasspath.compute().stream().map(Path::toString)
        .collect(Collectors.joining(File.pathSeparator));
    try {
      Files.createDirectories(dir);
      Files.writeString(dir.resolve("server.properties"), props.entrySet().stream()
          .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining("\n", "", "\n")));
      Files.writeString(dir.resolve("classpath.args"), "-cp \"" + argFileEscape(classpath) + "\"\n");
      Files.writeString(dir.resolve("logback.xml"), LOGBACK);
      Files.writeString(dir.resolve("log4j2.properties"), LOG4J2);
    } catch (IOException e) {
      throw new TestkitException("Kafka: cannot write the broker configuration to " + dir, e);
    }
  }

  private static String argFileEscape(String value) {
    return value.replace("\\", "\\\\").replace("\"", "\\\"");
  }

  static int freePort() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new TestkitException("Kafka: cannot find a free port on " + HOST, e);
    }
  }

  static boolean portAnswers(int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(HOST, port), 1000);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean waitFor(Process p, Duration timeout) {
    try {
      return p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !p.isAlive();
    }
  }

  @Override
  public String toString() {
    return "ChildBroker[" + bootstrapServers() + ", dir=" + dir + "]";
  }

  private static final String LOGBACK = """
      <configuration>
        <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
          <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
        </appender>
        <logger name="org.apache.kafka.clients" level="WARN"/>
        <logger name="org.apache.kafka.common.config" level="WARN"/>
        <logger name="state.change.logger" level="WARN"/>
        <logger name="kafka.request.logger" level="WARN"/>
        <root level="INFO"><appender-ref ref="OUT"/></root>
      </configuration>
      """;

  private static final String LOG4J2 = """
      status = warn
      appender.out.type = Console
      appender.out.name = OUT
      appender.out.layout.type = PatternLayout
      appender.out.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1.} - %m%n
      logger.clients.name = org.apache.kafka.clients
      logger.clients.level = warn
      logger.config.name = org.apache.kafka.common.config
      logger.config.level = warn
      logger.state.name = state.change.logger
      logger.state.level = warn
      rootLogger.level = info
      rootLogger.appenderRef.out.ref = OUT
      """;
}
