package io.txbox.testkit;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** Topic helpers shared by every kind of broker handle. */
abstract class AbstractKafkaBroker implements KafkaBroker {
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);
  // A failed call stays pending inside the client; closing must not wait for it again.
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

  @Override
  public void createTopic(String name, int partitions) {
    Objects.requireNonNull(name, "name");
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be at least 1 but was " + partitions);
    }
    Admin admin = admin();
    try {
      admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all()
          .get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new TestkitException("Kafka at " + bootstrapServers() + ": cannot create topic "
            + name + ": " + e.getCause(), e.getCause());
      }
    } catch (TimeoutException e) {
      throw new TestkitException("Kafka at " + bootstrapServers() + ": creating topic " + name
          + " took more than " + ADMIN_TIMEOUT.toSeconds() + " s", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TestkitException("Interrupted while creating topic " + name, e);
    } finally {
      admin.close(CLOSE_TIMEOUT);
    }
  }

  @Override
  public String uniqueTopic(String hint) {
    return Names.topicName(Objects.requireNonNull(hint, "hint"));
  }

  /** Deletes topics, ignoring ones that do not exist; waits at most {@code timeout}. */
  void deleteTopics(Collection<String> names, Duration timeout) throws Exception {
    if (names.isEmpty()) {
      return;
    }
    Admin admin = admin();
    try {
      admin.deleteTopics(names).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
        throw e;
      }
    } finally {
      admin.close(CLOSE_TIMEOUT);
    }
  }

  Admin admin() {
    return Admin.create(Map.of(
        AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
        AdminClientConfig.CLIENT_ID_CONFIG, "txbox-testkit-admin",
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) ADMIN_TIMEOUT.toMillis()));
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + bootstrapServers() + "]";
  }
}
