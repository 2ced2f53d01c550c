package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The cross-JVM protocol of {@link KafkaBroker#shared()}, on a lease directory of its own. */
class SharedBrokerLeaseIT {

  @Test
  void jvmsStartingAtOnce_shareOneBroker_whichExitsOnceNoJvmNeedsIt() throws Exception {
    Path root = Files.createTempDirectory("txbox-lease-it-");
    Path record = root.resolve("target/txbox-kafka/broker.properties");
    long brokerPid = -1;
    try {
      SharedBrokerProbe.Run first = probe(root);
      SharedBrokerProbe.Run second = probe(root);
      String out1 = first.await(Duration.ofSeconds(90));
      String out2 = second.await(Duration.ofSeconds(90));

      assertThat(bootstrap(out1)).as(out1 + out2).isNotEmpty().isEqualTo(bootstrap(out2));
      assertThat(List.of(out1, out2))
          .filteredOn(out -> out.contains("txbox-testkit: Kafka broker started in")).hasSize(1);
      assertThat(List.of(out1, out2))
          .filteredOn(out -> out.contains("txbox-testkit: reusing the Kafka broker")).hasSize(1);

      brokerPid = Long.parseLong(load(record).getProperty("pid"));
      long pid = brokerPid;
      // Both JVMs are gone, so nobody touches the alive file: the broker retires on its own.
      await().atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(250))
          .until(() -> ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true)
              && !Files.exists(record));
    } finally {
      if (brokerPid > 0) {
        ProcessHandle.of(brokerPid).ifPresent(ProcessHandle::destroyForcibly);
      }
      deleteTree(root);
    }
  }

  private static SharedBrokerProbe.Run probe(Path root) throws Exception {
    return SharedBrokerProbe.start(SharedBroker.PROJECT_ROOT_PROPERTY + "=" + root,
        KafkaBroker.IDLE_TIMEOUT_PROPERTY + "=5");
  }

  private static String bootstrap(String output) {
    return output.lines().filter(line -> line.startsWith("bootstrap="))
        .map(line -> line.substring("bootstrap=".length())).findFirst().orElse("");
  }

  private static Properties load(Path file) throws IOException {
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(file)) {
      props.load(in);
    }
    return props;
  }

  private static void deleteTree(Path root) throws IOException {
    try (Stream<Path> files = Files.walk(root)) {
      files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    }
  }
}
