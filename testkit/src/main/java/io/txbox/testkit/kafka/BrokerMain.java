package io.txbox.testkit.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.Properties;

/**
 * Main class of the child JVM started by {@link io.txbox.testkit.KafkaBroker}: formats the KRaft
 * storage on first start, then runs {@code kafka.Kafka}, and shuts the broker down when nobody
 * needs it any more. Not an API.
 *
 * <p>Arguments: {@code <server.properties> <cluster-id>}. System properties:
 *
 * <ul>
 *   <li>{@value #OWNER_PID}: exit when this process has exited (private brokers);
 *   <li>{@value #ALIVE_FILE} and {@value #IDLE_TIMEOUT_MILLIS}: exit when the file has not been
 *       touched for that long, or is gone (the shared broker, kept alive by every test JVM);
 *       first remove {@value #LEASE_RECORD} if it still names this process, so that no JVM
 *       picks a broker that is on its way out.
 * </ul>
 *
 * <p>Shutdown goes through {@code System.exit}, so Kafka's own shutdown hook runs; if that takes
 * longer than {@value #HALT_AFTER_SECONDS} s the JVM halts.
 */
public final class BrokerMain {
  /** System property: pid of the process that owns this broker. */
  public static final String OWNER_PID = "txbox.broker.ownerPid";
  /** System property: file that client JVMs touch while they need this broker. */
  public static final String ALIVE_FILE = "txbox.broker.aliveFile";
  /** System property: how long {@link #ALIVE_FILE} may stay untouched, in milliseconds. */
  public static final String IDLE_TIMEOUT_MILLIS = "txbox.broker.idleTimeoutMillis";
  /** System property: lease record naming this broker, removed when it exits for being idle. */
  public static final String LEASE_RECORD = "txbox.broker.leaseRecord";

  private static final int HALT_AFTER_SECONDS = 30;
  private static final Duration CHECK_EVERY = Duration.ofSeconds(1);

  private BrokerMain() {}

  /**
   * Formats the storage if needed and runs the broker until it is stopped.
   *
   * @param args {@code <server.properties> <cluster-id>}
   */
  public static void main(String[] args) throws IOException {
    if (args.length != 2) {
      System.err.println("usage: BrokerMain <server.properties> <cluster-id>");
      System.exit(2);
    }
    Path config = Path.of(args[0]);
    formatIfNeeded(config, args[1]);
    startWatchdog();
    kafka.Kafka.main(new String[] {config.toString()});
  }

  private static void formatIfNeeded(Path config, String clusterId) throws IOException {
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(config)) {
      props.load(in);
    }
    String logDirs = props.getProperty("log.dirs");
    if (logDirs == null) {
      throw new IllegalArgumentException(config + " has no log.dirs");
    }
    Path firstDir = Path.of(logDirs.split(",")[0].trim());
    if (Files.exists(firstDir.resolve("meta.properties"))) {
      return; // a restart: keep the data
    }
    // In-process rather than a second JVM: saves a JVM start. execute() returns instead of exiting.
    int rc = kafka.tools.StorageTool.execute(new String[] {"format", "--cluster-id", clusterId,
        "--config", config.toString(), "--standalone", "--ignore-formatted"}, System.out);
    if (rc != 0) {
      System.err.println("txbox-testkit broker: storage format failed with exit code " + rc);
      System.exit(rc);
    }
  }

  private static void startWatchdog() {
    Optional<Long> ownerPid = Optional.ofNullable(System.getProperty(OWNER_PID)).map(Long::valueOf);
    Optional<Path> aliveFile = Optional.ofNullable(System.getProperty(ALIVE_FILE)).map(Path::of);
    Duration idle = Duration.ofMillis(Long.parseLong(System.getProperty(IDLE_TIMEOUT_MILLIS,
        "60000")));
    if (ownerPid.isEmpty() && aliveFile.isEmpty()) {
      return;
    }
    Thread watchdog = new Thread(() -> {
      while (true) {
        sleep(CHECK_EVERY);
        Optional<String> reason = ownerPid.flatMap(BrokerMain::ownerGone);
        if (reason.isEmpty() && aliveFile.isPresent()) {
          reason = idleFor(aliveFile.get(), idle).flatMap(why -> retireIfStillIdle(
              aliveFile.get(), idle));
        }
        if (reason.isPresent()) {
          shutDown(reason.get());
          return;
        }
      }
    }, "txbox-broker-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }

  /**
   * Under the lease lock that clients take before they pick a broker: checks once more that
   * nobody touched the alive file, then removes the lease record, so a client either sees this
   * broker before it retires or not at all.
   */
  private static Optional<String> retireIfStillIdle(Path aliveFile, Duration idle) {
    String recordProperty = System.getProperty(LEASE_RECORD);
    if (recordProperty == null) {
      return idleFor(aliveFile, idle);
    }
    Path record = Path.of(recordProperty);
    Path lockFile = record.resolveSibling("lock");
    try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE,
            StandardOpenOption.WRITE);
        FileLock lock = channel.tryLock()) {
      if (lock == null) {
        return Optional.empty(); // a client is choosing a broker right now: ask again later
      }
      Optional<String> reason = idleFor(aliveFile, idle);
      if (reason.isPresent()) {
        removeOwnRecord(record);
      }
      return reason;
    } catch (IOException e) {
      return idleFor(aliveFile, idle);
    }
  }

  private static void removeOwnRecord(Path record) {
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(record)) {
      props.load(in);
    } catch (IOException e) {
      return; // gone already
    }
    if (Long.toString(ProcessHandle.current().pid()).equals(props.getProperty("pid"))) {
      try {
        Files.deleteIfExists(record);
      } catch (IOException e) {
        // clients still check the pid
      }
    }
  }

  private static Optional<String> ownerGone(long pid) {
    boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    return alive ? Optional.empty() : Optional.of("owner process " + pid + " has exited");
  }

  private static Optional<String> idleFor(Path file, Duration idle) {
    try {
      Instant touched = Files.getLastModifiedTime(file).toInstant();
      Duration since = Duration.between(touched, Instant.now());
      return since.compareTo(idle) > 0
          ? Optional.of(file + " not touched for " + since.toSeconds() + " s") : Optional.empty();
    } catch (NoSuchFileException e) {
      return Optional.of(file + " is gone");
    } catch (IOException e) {
      return Optional.empty(); // try again next round
    }
  }

  private static void shutDown(String reason) {
    System.err.println(Instant.now() + " txbox-testkit broker: shutting down: " + reason);
    Thread halt = new Thread(() -> {
      sleep(Duration.ofSeconds(HALT_AFTER_SECONDS));
      System.err.println("txbox-testkit broker: shutdown took too long, halting");
      Runtime.getRuntime().halt(1);
    }, "txbox-broker-halt");
    halt.setDaemon(true);
    halt.start();
    System.exit(0);
  }

  private static void sleep(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
