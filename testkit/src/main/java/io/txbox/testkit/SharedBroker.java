package io.txbox.testkit;

import io.txbox.testkit.kafka.BrokerMain;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker shared by all test JVMs of a build.
 *
 * <p>A lease directory holds a lock file (serialises starts across JVMs), {@code
 * broker.properties} (address and pid of the running broker), an {@code alive} file (touched by
 * every JVM that uses the broker; the broker exits when it goes stale) and the broker's own
 * directory.
 */
final class SharedBroker {
  static final String PROJECT_ROOT_PROPERTY = "txbox.projectRoot";
  private static final Logger log = LoggerFactory.getLogger(SharedBroker.class);
  private static final Duration HEARTBEAT = Duration.ofSeconds(5);
  private static final Duration LOCK_TIMEOUT =
      KafkaBroker.DEFAULT_START_TIMEOUT.plus(Duration.ofSeconds(30));

  private static @Nullable Handle current;
  private static @Nullable ScheduledExecutorService heartbeat;

  private SharedBroker() {}

  static synchronized KafkaBroker get() {
    Handle handle = current;
    if (handle != null && handle.usable()) {
      return handle;
    }
    String external = System.getenv(KafkaBroker.ENV_BOOTSTRAP_SERVERS);
    if (external != null && !external.isBlank()) {
      handle = new Handle(external.trim(), -1);
      probeExternal(handle);
      System.out.println("txbox-testkit: using the Kafka broker at " + handle.bootstrapServers()
          + " from " + KafkaBroker.ENV_BOOTSTRAP_SERVERS);
    } else {
      handle = acquire(leaseDir());
    }
    current = handle;
    return handle;
  }

  static Path leaseDir() {
    String root = System.getProperty(PROJECT_ROOT_PROPERTY);
    if (root != null && !root.isBlank()) {
      return Path.of(root, "target", "txbox-kafka").toAbsolutePath();
    }
    String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
    return Path.of(System.getProperty("java.io.tmpdir"), "txbox-kafka-" + user).toAbsolutePath();
  }

  static Duration idleTimeout() {
    String value = System.getProperty(KafkaBroker.IDLE_TIMEOUT_PROPERTY);
    if (value == null || value.isBlank()) {
      return KafkaBroker.DEFAULT_IDLE_TIMEOUT;
    }
    try {
      Duration idle = value.strip().chars().allMatch(Character::isDigit)
          ? Duration.ofSeconds(Long.parseLong(value.strip())) : Duration.parse(value.strip());
      if (idle.compareTo(Duration.ofSeconds(5)) < 0) {
        throw new IllegalArgumentException(KafkaBroker.IDLE_TIMEOUT_PROPERTY
            + " must be at least 5 s but was " + value);
      }
      return idle;
    } catch (DateTimeParseException | NumberFormatException e) {
      throw new IllegalArgumentException(KafkaBroker.IDLE_TIMEOUT_PROPERTY
          + " must be an ISO-8601 duration such as PT2M or whole seconds but was " + value, e);
    }
  }

  private static Handle acquire(Path lease) {
    Path alive = lease.resolve("alive");
    try {
      Files.createDirectories(lease);
      touch(alive);
    } catch (IOException e) {
      throw new TestkitException("Kafka: cannot use the lease directory " + lease, e);
    }
    startHeartbeat(alive, idleTimeout());
    try (FileChannel channel = FileChannel.open(lease.resolve("lock"), StandardOpenOption.CREATE,
            StandardOpenOption.WRITE);
        FileLock ignored = lock(channel, lease)) {
      Properties record = readRecord(lease);
      if (record != null) {
        Handle handle = new Handle(record.getProperty("bootstrap.servers"),
            Long.parseLong(record.getProperty("pid")));
        if (handle.usable()) {
          System.out.println("txbox-testkit: reusing the Kafka broker at "
              + handle.bootstrapServers() + " (pid " + handle.pid + ", started "
              + record.getProperty("started.at") + ")");
          return handle;
        }
        log.debug("[kafka {}] recorded broker pid {} is gone, starting a new one",
            handle.bootstrapServers(), handle.pid);
      }
      return startNew(lease, alive);
    } catch (IOException e) {
      throw new TestkitException("Kafka: cannot lock the lease directory " + lease, e);
    }
  }

  private static Handle startNew(Path lease, Path alive) throws IOException {
    deleteOldBrokerDirs(lease);
    String name = "broker-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern(
        "yyyyMMdd-HHmmss")) + "-" + Names.randomSuffix(4);
    Path record = lease.resolve("broker.properties");
    long start = System.nanoTime();
    ChildBroker child = ChildBroker.launch(lease.resolve(name), KafkaBroker.DEFAULT_JVM_OPTIONS,
        Map.of(), KafkaBroker.DEFAULT_START_TIMEOUT,
        new ChildBroker.AliveFileWatch(alive, idleTimeout(), record));
    double seconds = (System.nanoTime() - start) / 1e9;
    Properties props = new Properties();
    props.setProperty("bootstrap.servers", child.bootstrapServers());
    props.setProperty("pid", Long.toString(child.pid()));
    props.setProperty("dir", child.dir().toString());
    props.setProperty("started.at", Instant.now().toString());
    Path tmp = lease.resolve("broker.properties.tmp");
    try (OutputStream out = Files.newOutputStream(tmp)) {
      props.store(out, "txbox-testkit shared Kafka broker");
    }
    Files.move(tmp, record, StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
    System.out.printf("txbox-testkit: Kafka broker started in %.1f s at %s (pid %d, log %s)%n",
        seconds, child.bootstrapServers(), child.pid(), child.logFile());
    return new Handle(child.bootstrapServers(), child.pid());
  }

  private static FileLock lock(FileChannel channel, Path lease) throws IOException {
    long deadline = System.nanoTime() + LOCK_TIMEOUT.toNanos();
    while (true) {
      FileLock lock = channel.tryLock();
      if (lock != null) {
        return lock;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new TestkitException("Kafka: another JVM has held the lock " + lease.resolve("lock")
            + " for more than " + LOCK_TIMEOUT.toSeconds() + " s while starting the shared broker");
      }
      Poll.sleep(Duration.ofMillis(100));
    }
  }

  private static @Nullable Properties readRecord(Path lease) {
    Path file = lease.resolve("broker.properties");
    if (!Files.exists(file)) {
      return null;
    }
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(file)) {
      props.load(in);
    } catch (IOException e) {
      return null;
    }
    boolean complete = props.getProperty("bootstrap.servers") != null
        && props.getProperty("pid", "").matches("\\d+");
    return complete ? props : null;
  }

  /** Called with the lock held and no live broker: every old directory is garbage. */
  private static void deleteOldBrokerDirs(Path lease) {
    try (Stream<Path> dirs = Files.list(lease)) {
      dirs.filter(p -> p.getFileName().toString().startsWith("broker-") && Files.isDirectory(p))
          .forEach(SharedBroker::deleteTree);
    } catch (IOException e) {
      log.debug("Cannot list {}: {}", lease, e.toString());
    }
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException e) {
          // best effort
        }
      });
    } catch (IOException e) {
      log.debug("Cannot delete {}: {}", dir, e.toString());
    }
  }

  private static void startHeartbeat(Path alive, Duration idleTimeout) {
    if (heartbeat != null) {
      return;
    }
    long everyMillis = Math.min(HEARTBEAT.toMillis(), idleTimeout.toMillis() / 3);
    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread thread = new Thread(r, "txbox-testkit-kafka-heartbeat");
      thread.setDaemon(true); // must never keep a test JVM alive
      return thread;
    });
    executor.scheduleWithFixedDelay(() -> {
      try {
        touch(alive);
      } catch (IOException | RuntimeException e) {
        log.debug("Cannot touch {}: {}", alive, e.toString());
      }
    }, everyMillis, everyMillis, TimeUnit.MILLISECONDS);
    heartbeat = executor;
  }

  private static void touch(Path file) throws IOException {
    if (!Files.exists(file)) {
      Files.createDirectories(file.getParent());
      Files.write(file, new byte[0], StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    }
    Files.setLastModifiedTime(file, FileTime.from(Instant.now()));
  }

  private static void probeExternal(Handle handle) {
    Admin admin = handle.admin();
    try {
      admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      throw externalUnreachable(handle, "no answer within 10 s", e);
    } catch (ExecutionException e) {
      throw externalUnreachable(handle, String.valueOf(e.getCause()), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw externalUnreachable(handle, "interrupted", e);
    } finally {
      admin.close(Duration.ZERO); // do not wait for the failed call a second time
    }
  }

  private static TestkitException externalUnreachable(Handle handle, String why, Throwable e) {
    return new TestkitException("Kafka at " + handle.bootstrapServers() + " (from "
        + KafkaBroker.ENV_BOOTSTRAP_SERVERS + ") is not reachable: " + why + ". Start that broker"
        + " or unset " + KafkaBroker.ENV_BOOTSTRAP_SERVERS + " to let the tests start one.", e);
  }

  /** This JVM's view of the shared broker. */
  static final class Handle extends AbstractKafkaBroker {
    private final String bootstrapServers;
    private final long pid;

    Handle(String bootstrapServers, long pid) {
      this.bootstrapServers = bootstrapServers;
      this.pid = pid;
    }

    @Override
    public String bootstrapServers() {
      return bootstrapServers;
    }

    /** External brokers (pid -1) are trusted; ours must be alive, be ours, and answer. */
    boolean usable() {
      if (pid < 0) {
        return true;
      }
      ProcessHandle process = ProcessHandle.of(pid).orElse(null);
      if (process == null || !process.isAlive()) {
        return false;
      }
      boolean ours = process.info().commandLine()
          .map(line -> line.contains(BrokerMain.class.getName())).orElse(true);
      String port = bootstrapServers.substring(bootstrapServers.lastIndexOf(':') + 1);
      return ours && port.matches("\\d+") && ChildBroker.portAnswers(Integer.parseInt(port));
    }
  }
}
