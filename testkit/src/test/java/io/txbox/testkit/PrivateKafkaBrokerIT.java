package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

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
  void privateBroker_isNotTheSharedOne() {
    assertThat(broker.bootstrapServers()).isNotEqualTo(KafkaBroker.shared().bootstrapServers());
  }
}
