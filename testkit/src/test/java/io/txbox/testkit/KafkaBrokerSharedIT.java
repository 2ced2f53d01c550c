package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class KafkaBrokerSharedIT {

  @RegisterExtension static final TestKafka KAFKA = TestKafka.shared();

  @Test
  void sharedBroker_recordProduced_isConsumed() throws Exception {
    String topic = KAFKA.uniqueTopic("roundtrip");

    KafkaRoundtrip.produce(KAFKA.bootstrapServers(), topic, "one", "two");

    assertThat(KafkaRoundtrip.consume(KAFKA.bootstrapServers(), topic, 2))
        .containsExactly("one", "two");
  }

  @Test
  void shared_calledTwice_returnsTheSameBroker() {
    assertThat(KafkaBroker.shared().bootstrapServers())
        .isEqualTo(KafkaBroker.shared().bootstrapServers())
        .isEqualTo(KAFKA.bootstrapServers());
  }

  @Test
  void shared_inAnotherJvm_reusesTheRunningBroker() throws Exception {
    String output = SharedBrokerProbe.start(
        SharedBroker.PROJECT_ROOT_PROPERTY + "="
            + System.getProperty(SharedBroker.PROJECT_ROOT_PROPERTY, ""),
        "java.io.tmpdir=" + System.getProperty("java.io.tmpdir"))
        .await(Duration.ofSeconds(90));

    assertThat(output)
        .contains("bootstrap=" + KAFKA.bootstrapServers())
        .contains("reusing the Kafka broker at " + KAFKA.bootstrapServers());
  }

  @Test
  void createTopic_createsTheRequestedPartitions() throws Exception {
    String topic = KAFKA.uniqueTopic("partitioned");

    KAFKA.createTopic(topic, 3);
    KAFKA.createTopic(topic, 3); // again: no error

    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
        KAFKA.bootstrapServers()))) {
      TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
          .get(10, TimeUnit.SECONDS).get(topic);
      assertThat(description.partitions()).hasSize(3);
    }
  }

  @Test
  void uniqueTopic_sameHint_givesDifferentNames() {
    assertThat(KAFKA.uniqueTopic("orders")).startsWith("orders-")
        .isNotEqualTo(KAFKA.uniqueTopic("orders"));
  }
}
