package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.txbox.testkit.kafka.BrokerMain;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PrivateKafkaBrokerIT {

  static PrivateKafkaBroker broker;

  @BeforeAll
  static void startBroker() {
    broker = KafkaBroker.startPrivate();
  }

  @AfterAll
  static void closeBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  @Test
  void killedBroker_restartsOnTheSameAddressWithItsData() throws Exception {
    String bootstrap = broker.bootstrapServers();
    String topic = broker.uniqueTopic("crash");
    KafkaRoundtrip.produce(bootstrap, topic, "before");

    broker.kill();
    assertThat(broker.isRunning()).isFalse();
    broker.restart();

    assertThat(broker.bootstrapServers()).isEqualTo(bootstrap);
    KafkaRoundtrip.produce(bootstrap, topic, "after");
    assertThat(KafkaRoundtrip.consume(bootstrap, topic, 2)).containsExactly("before", "after");
  }

  @Test
  void stoppedBroker_restartsOnTheSameAddressWithItsData() throws Exception {
    String bootstrap = broker.bootstrapServers();
    String topic = broker.uniqueTopic("clean-stop");
    KafkaRoundtrip.produce(bootstrap, topic, "before");

    broker.stop();
    assertThat(broker.isRunning()).isFalse();
    broker.restart();

    KafkaRoundtrip.produce(bootstrap, topic, "after");
    assertThat(KafkaRoundtrip.consume(bootstrap, topic, 2)).containsExactly("before", "after");
  }

  @Test
  void brokerThatCannotStart_failsNamingKafkaTheCommandAndTheLog() throws Exception {
    TestkitException failure = catchThrowableOfType(TestkitException.class,
        () -> KafkaBroker.builder().brokerProperty("num.io.threads", "many").start());

    assertThat(failure.getMessage())
        .contains("Kafka broker at 127.0.0.1:")
        .contains("Command: ").contains(BrokerMain.class.getName())
        .contains("Invalid value many for configuration num.io.threads");
    Matcher log = Pattern.compile("Log (\\S+)broker\\.log ends with").matcher(failure.getMessage());
    if (log.find()) {
      deleteTree(Path.of(log.group(1))); // kept by the kit for diagnosis; not needed here
    }
  }

  @Test
  void privateBroker_isNotTheSharedOne() {
    assertThat(broker.bootstrapServers()).isNotEqualTo(KafkaBroker.shared().bootstrapServers());
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    }
  }
}
