package io.txbox.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared Kafka broker ({@link KafkaBroker#shared()}) as a per-class JUnit 5 extension, with
 * topic names that no other test class uses and that are deleted after the class.
 *
 * <pre>{@code
 * @RegisterExtension static final TestKafka KAFKA = TestKafka.shared();
 *
 * @Test void publishes() {
 *   String topic = KAFKA.uniqueTopic("orders");
 *   try (var producer = new KafkaProducer<>(KAFKA.producerConfig(),
 *       new StringSerializer(), new StringSerializer())) { ... }
 * }
 * }</pre>
 */
public final class TestKafka implements BeforeAllCallback, AfterAllCallback {
  private static final Logger log = LoggerFactory.getLogger(TestKafka.class);
  private static final Duration DELETE_TIMEOUT = Duration.ofSeconds(10);

  private final Set<String> topics = ConcurrentHashMap.newKeySet();
  private volatile @Nullable KafkaBroker broker;
  private @Nullable String ownerId;

  private TestKafka() {}

  /** Returns an extension on the broker shared by the whole build. */
  public static TestKafka shared() {
    return new TestKafka();
  }

  @Override
  public synchronized void beforeAll(ExtensionContext context) {
    if (broker != null) {
      return; // a @Nested class
    }
    broker = KafkaBroker.shared();
    ownerId = context.getUniqueId();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    KafkaBroker current;
    List<String> toDelete;
    synchronized (this) {
      if (broker == null || !context.getUniqueId().equals(ownerId)) {
        return;
      }
      current = broker;
      toDelete = new ArrayList<>(topics);
      topics.clear();
      broker = null;
      ownerId = null;
    }
    if (current instanceof AbstractKafkaBroker admin && !toDelete.isEmpty()) {
      try {
        admin.deleteTopics(toDelete, DELETE_TIMEOUT);
      } catch (Exception e) {
        // the broker is shared and short-lived: a leftover topic costs nothing
        log.warn("[kafka {}] could not delete topics {}: {}", current.bootstrapServers(),
            toDelete, e.toString());
      }
    }
  }

  /** Returns the broker. */
  public KafkaBroker broker() {
    KafkaBroker current = broker;
    if (current == null) {
      throw new IllegalStateException("TestKafka is not active: register it as a static "
          + "@RegisterExtension field");
    }
    return current;
  }

  /** Returns the {@code bootstrap.servers} value for clients. */
  public String bootstrapServers() {
    return broker().bootstrapServers();
  }

  /**
   * Returns a topic name unique to this call, deleted after the class. See {@link
   * KafkaBroker#uniqueTopic(String)}.
   */
  public String uniqueTopic(String hint) {
    String topic = broker().uniqueTopic(hint);
    topics.add(topic);
    return topic;
  }

  /**
   * Creates a topic, deleted after the class. See {@link KafkaBroker#createTopic(String, int)}.
   */
  public void createTopic(String name, int partitions) {
    broker().createTopic(name, partitions);
    topics.add(name);
  }

  /**
   * Returns a producer configuration for this broker: bootstrap servers, {@code acks=all},
   * idempotence on. Pass serializers to the producer's constructor.
   */
  public Map<String, Object> producerConfig() {
    Map<String, Object> config = new HashMap<>();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    config.put(ProducerConfig.ACKS_CONFIG, "all");
    config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    return config;
  }

  /**
   * Returns a consumer configuration for this broker: the group, reading from the earliest
   * offset, no auto commit. Pass deserializers to the consumer's constructor.
   *
   * @param groupId consumer group; use {@link #uniqueTopic(String)}-style names to isolate tests
   */
  public Map<String, Object> consumerConfig(String groupId) {
    Objects.requireNonNull(groupId, "groupId");
    Map<String, Object> config = new HashMap<>();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    config.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    return config;
  }
}
