package io.txbox.testkit;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A real Kafka broker for tests: a single-node KRaft broker ({@code kafka.Kafka} from {@code
 * org.apache.kafka:kafka_2.13}) running in a child JVM on free ports of 127.0.0.1.
 *
 * <p>The broker's defaults suit tests: 4 partitions for new topics, replication factor 1 for the
 * internal topics, no initial rebalance delay, and automatic topic creation.
 *
 * <pre>{@code
 * String bootstrap = KafkaBroker.shared().bootstrapServers();   // one broker for the whole build
 *
 * try (PrivateKafkaBroker broker = KafkaBroker.startPrivate()) { // fault tests: yours to kill
 *   broker.kill();
 *   broker.restart();                                             // same address, same data
 * }
 * }</pre>
 */
public interface KafkaBroker {
  /** Environment variable: bootstrap servers of an external broker used by {@link #shared()}. */
  String ENV_BOOTSTRAP_SERVERS = "TXBOX_TEST_KAFKA";

  /**
   * System property: how long the shared broker lives after the last test JVM stopped using it,
   * as an ISO-8601 duration ({@code PT2M}) or whole seconds. Default {@link
   * #DEFAULT_IDLE_TIMEOUT}. Raise it while debugging with all threads suspended.
   */
  String IDLE_TIMEOUT_PROPERTY = "txbox.testkit.kafka.idleTimeout";

  /** How long the shared broker lives after its last user is gone: 60 s. */
  Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);

  /** How long a start may take before it fails with the broker's log: 60 s. */
  Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(60);

  /** Options of the broker JVM: a small heap and a quick start. */
  List<String> DEFAULT_JVM_OPTIONS = List.of("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC",
      "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Djava.awt.headless=true");

  /**
   * Returns the broker shared by every test JVM of this build, starting it if none is running.
   *
   * <p>The first call in a JVM takes a file lock in the lease directory ({@code
   * <txbox.projectRoot>/target/txbox-kafka}, else {@code <java.io.tmpdir>/txbox-kafka-<user>}),
   * reuses the broker recorded there if its process is alive and its port answers, and otherwise
   * starts one. While this JVM runs it touches the lease's alive file every few seconds; the
   * broker exits once nobody has touched it for {@link #IDLE_TIMEOUT_PROPERTY}. Later calls in the
   * same JVM return at once.
   *
   * <p>With {@value #ENV_BOOTSTRAP_SERVERS} set, returns that broker instead and starts nothing.
   *
   * @throws TestkitException if the broker cannot be started; the message holds the command and
   *     the end of the broker's log
   */
  static KafkaBroker shared() {
    return SharedBroker.get();
  }

  /**
   * Starts a broker that belongs to the caller, with the default settings. Close it when done; it
   * also exits when this JVM does.
   *
   * @throws TestkitException if the broker cannot be started
   */
  static PrivateKafkaBroker startPrivate() {
    return builder().start();
  }

  /** Returns a builder for a private broker with non-default settings. */
  static Builder builder() {
    return new Builder();
  }

  /** Returns the {@code bootstrap.servers} value for clients, such as {@code 127.0.0.1:40123}. */
  String bootstrapServers();

  /**
   * Creates a topic with replication factor 1 and waits until the broker confirms it. Does
   * nothing if the topic already exists.
   *
   * @param name topic name
   * @param partitions number of partitions, at least 1
   * @throws TestkitException if the broker rejects the topic or does not answer within 30 s
   */
  void createTopic(String name, int partitions);

  /**
   * Returns a topic name no other test uses: {@code <hint>-<random>}, with characters Kafka does
   * not allow replaced. The topic is not created: a client's first use creates it with 4
   * partitions, or call {@link #createTopic(String, int)}.
   *
   * @param hint readable part of the name
   */
  String uniqueTopic(String hint);

  /** Settings for a private broker. Each setter checks its argument at once. */
  final class Builder {
    private Duration startTimeout = DEFAULT_START_TIMEOUT;
    private List<String> jvmOptions = DEFAULT_JVM_OPTIONS;
    private final Map<String, String> brokerProperties = new LinkedHashMap<>();

    Builder() {}

    /** How long the start may take. Default {@link KafkaBroker#DEFAULT_START_TIMEOUT}. */
    public Builder startTimeout(Duration startTimeout) {
      Objects.requireNonNull(startTimeout, "startTimeout");
      if (startTimeout.isNegative() || startTimeout.isZero()) {
        throw new IllegalArgumentException("startTimeout must be positive but was "
            + startTimeout);
      }
      this.startTimeout = startTimeout;
      return this;
    }

    /** Options of the broker JVM. Default {@link KafkaBroker#DEFAULT_JVM_OPTIONS}. */
    public Builder jvmOptions(List<String> jvmOptions) {
      this.jvmOptions = List.copyOf(Objects.requireNonNull(jvmOptions, "jvmOptions"));
      return this;
    }

    /**
     * Sets one broker property ({@code server.properties} key), overriding the test default.
     * Default: none. Listener and storage keys are managed by the kit; overriding them breaks
     * {@link PrivateKafkaBroker#restart()}.
     */
    public Builder brokerProperty(String key, String value) {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(value, "value");
      if (key.isBlank()) {
        throw new IllegalArgumentException("broker property key must not be blank");
      }
      brokerProperties.put(key, value);
      return this;
    }

    /**
     * Starts the broker and waits until it answers.
     *
     * @throws TestkitException if it does not; the message holds the command and the log's end
     */
    public PrivateKafkaBroker start() {
      return PrivateBroker.start(startTimeout, jvmOptions, Map.copyOf(brokerProperties));
    }
  }
}
