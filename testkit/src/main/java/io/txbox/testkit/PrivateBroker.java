package io.txbox.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A broker owned by one test; exits with the test JVM even if never closed. */
final class PrivateBroker extends AbstractKafkaBroker implements PrivateKafkaBroker {
  private static final Logger log = LoggerFactory.getLogger(PrivateBroker.class);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);
  private static final Set<PrivateBroker> OPEN = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> OPEN.forEach(PrivateBroker::close),
        "txbox-testkit-private-kafka-cleanup"));
  }

  private final ChildBroker child;
  private volatile boolean closed;

  private PrivateBroker(ChildBroker child) {
    this.child = child;
  }

  static PrivateBroker start(Duration startTimeout, List<String> jvmOptions,
      Map<String, String> brokerProperties) {
    Path dir;
    try {
      dir = Files.createTempDirectory("txbox-kafka-");
    } catch (IOException e) {
      throw new TestkitException("Kafka: cannot create a data directory for a private broker", e);
    }
    // After a kill the controller keeps the dead incarnation registered until its session times
    // out; a short session lets restart() finish in seconds rather than after the 9 s default.
    Map<String, String> props = new HashMap<>();
    props.put("broker.heartbeat.interval.ms", "500");
    props.put("broker.session.timeout.ms", "3000");
    props.putAll(brokerProperties);
    long start = System.nanoTime();
    // The broker also watches this JVM's pid: a crashed test run leaves no broker behind.
    ChildBroker child = ChildBroker.launch(dir, jvmOptions, props, startTimeout,
        new ChildBroker.OwnerWatch(ProcessHandle.current().pid()));
    PrivateBroker broker = new PrivateBroker(child);
    OPEN.add(broker);
    log.info("[kafka {}] private broker started in {} ms, pid {}, log {}",
        child.bootstrapServers(), (System.nanoTime() - start) / 1_000_000, child.pid(),
        child.logFile());
    return broker;
  }

  @Override
  public String bootstrapServers() {
    return child.bootstrapServers();
  }

  @Override
  public void stop() {
    checkOpen();
    child.stop(STOP_TIMEOUT);
    log.info("[kafka {}] private broker stopped", bootstrapServers());
  }

  @Override
  public void kill() {
    checkOpen();
    child.kill();
    log.info("[kafka {}] private broker killed", bootstrapServers());
  }

  @Override
  public void restart() {
    checkOpen();
    long start = System.nanoTime();
    child.stop(STOP_TIMEOUT);
    child.start();
    log.info("[kafka {}] private broker restarted in {} ms, pid {}", bootstrapServers(),
        (System.nanoTime() - start) / 1_000_000, child.pid());
  }

  @Override
  public boolean isRunning() {
    return child.isRunning();
  }

  @Override
  public Path logFile() {
    return child.logFile();
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    OPEN.remove(this);
    child.kill();
    child.deleteData();
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("private broker " + bootstrapServers() + " is closed");
    }
  }
}
