package io.txbox.testkit;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Produces and consumes with real clients. */
final class KafkaRoundtrip {
  private KafkaRoundtrip() {}

  static void produce(String bootstrap, String topic, String... values) throws Exception {
    Map<String, Object> config = Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ProducerConfig.ACKS_CONFIG, "all",
        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000,
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    try (var producer = new KafkaProducer<>(config, new StringSerializer(),
        new StringSerializer())) {
      for (String value : values) {
        producer.send(new ProducerRecord<>(topic, "key", value)).get();
      }
    }
  }

  /** Reads the topic from the start with a fresh group until {@code count} values arrived. */
  static List<String> consume(String bootstrap, String topic, int count) {
    Map<String, Object> config = Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.GROUP_ID_CONFIG, "g-" + UUID.randomUUID(),
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    List<String> values = new ArrayList<>();
    try (var consumer = new KafkaConsumer<>(config, new StringDeserializer(),
        new StringDeserializer())) {
      consumer.subscribe(List.of(topic));
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
          values.add(record.value());
        }
        return values.size() >= count;
      });
    }
    return values;
  }
}
