package io.txbox.relay.kafka;

import io.txbox.ConfigException;
import io.txbox.relay.internal.TargetNames;
import io.txbox.Texts;
import io.txbox.internal.Args;
import io.txbox.internal.OptionalDependency;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox rows to Kafka: record key = the row's routing key (UTF-8), value = the
 * payload, headers = {@link PublishRecord#headers()} (UTF-8 values). The producer is idempotent
 * with {@code acks=all}, so retries inside the producer neither duplicate nor reorder records of
 * a partition, and records with one key stay in order.
 *
 * <pre>{@code
 * KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers("broker:9092").build();
 * Relay.builder().dataSource(ds).route("payments", kafka.topic("payments")).build();
 * }</pre>
 *
 * <p>Errors: a record too large for the producer or broker, an invalid topic name or a
 * serialization failure dead-letter the row at once; everything else (timeouts, broker down,
 * not enough replicas) is retried with backoff.
 *
 * <p>Fencing: by default a relay that lost a lane while frozen (past its lane lease) and then
 * resumed still sends the batch it held, so consumers may see late duplicates (the inbox
 * absorbs them). {@link Builder#strictFencing(String)} turns on per-lane Kafka transactions
 * that let the broker fence such a relay; its consumers then read with {@code
 * isolation.level=read_committed}.
 *
 * <p>kafka-clients is an optional dependency of txbox-relay: without it on the class path,
 * {@link #builder()} and {@link #of} throw a {@link ConfigException} naming
 * {@code org.apache.kafka:kafka-clients}.
 */
public final class KafkaPublisher implements Publisher {
    /** Broker tag in metrics: {@value}. */
    public static final String BROKER = "kafka";
    /**
     * Default {@code linger.ms}: {@value}. The relay hands a whole batch to the producer and then
     * waits for its acknowledgements, so a record that lingers only waits longer; records still
     * share a request while earlier ones are in flight. The measurement behind it is in
     * bench/PERFORMANCE.md (e2e-latency).
     */
    public static final String DEFAULT_LINGER_MS = "0";
    /** Default {@code batch.size}: {@value} bytes. */
    public static final String DEFAULT_BATCH_SIZE = "262144";
    /** Default {@code compression.type}: {@value}. */
    public static final String DEFAULT_COMPRESSION = "lz4";
    /** Default {@code delivery.timeout.ms}: {@value}; keep it below the relay's publish timeout. */
    public static final String DEFAULT_DELIVERY_TIMEOUT_MS = "8000";
    /** Default {@code request.timeout.ms}: {@value}. */
    public static final String DEFAULT_REQUEST_TIMEOUT_MS = "5000";
    /** Default {@code max.block.ms}: {@value}; bounds how long send() waits for metadata or buffer space. */
    public static final String DEFAULT_MAX_BLOCK_MS = "5000";

    // The Kafka types are used only in ProducerPublisher and Builder.build(): this class must load without kafka-clients.
    private final ProducerPublisher impl;

    private KafkaPublisher(ProducerPublisher impl) {
        this.impl = impl;
    }

    /**
     * A builder for a publisher that owns its producer.
     *
     * @throws ConfigException if kafka-clients is not on the class path
     */
    public static Builder builder() {
        requireClient();
        return new Builder();
    }

    private static void requireClient() {
        OptionalDependency.require("org.apache.kafka.clients.producer.KafkaProducer", "org.apache.kafka:kafka-clients",
                "KafkaPublisher");
    }

    /**
     * Wraps a producer the caller owns and configured (it must be idempotent with {@code
     * acks=all} for the ordering guarantee); {@link #close()} leaves it open.
     */
    public static KafkaPublisher of(Producer<byte[], byte[]> producer) {
        requireClient();
        if (producer == null) {
            throw new ConfigException("producer must not be null");
        }
        return new KafkaPublisher(ProducerPublisher.external(producer));
    }

    /** A route to {@code topic} through this publisher. */
    public Route topic(String topic) {
        TargetNames.kafkaTopic(topic);
        impl.addTopic(topic);
        return Route.of(this, topic);
    }

    @Override
    public String broker() {
        return BROKER;
    }

    @Override
    public CompletionStage<Void> publish(String target, PublishRecord r) {
        Args.notNull(target, "target");
        Args.notNull(r, "record");
        return impl.publish(target, r);
    }

    /**
     * With {@code linger.ms} above 0 (or a producer the caller owns): sends the batch's last
     * records now instead of after {@code linger.ms}, since the relay waits for every
     * confirmation right after this call anyway, and blocks until the records sent so far (by
     * any worker sharing this producer) are acknowledged or failed, at most {@code
     * delivery.timeout.ms}. With {@code linger.ms} 0 (the default) no record waits in the
     * producer and this returns at once, so a worker waits only for its own records.
     */
    @Override
    public void endOfBatch() {
        impl.endOfBatch();
    }

    /** Whether this publisher runs in strict fencing mode ({@link Builder#strictFencing}). */
    public boolean strictFencing() {
        return impl.strictFencing();
    }

    @Override
    public void check(Duration timeout) {
        impl.check(timeout);
    }

    @Override
    public void close() {
        impl.close();
    }

    @Override
    public String toString() {
        return "KafkaPublisher[" + impl.name() + "]";
    }

    /** Configures the producer a {@link KafkaPublisher} owns. */
    public static final class Builder {
        private final Map<String, String> properties = new LinkedHashMap<>();
        private @Nullable String bootstrapServers;
        private @Nullable String transactionalIdPrefix;

        Builder() {}

        /** Kafka {@code bootstrap.servers}. Required unless given with {@link #property}. */
        public Builder bootstrapServers(String bootstrapServers) {
            if (bootstrapServers == null || bootstrapServers.isBlank()) {
                throw new ConfigException("bootstrapServers must be non-blank, but was "
                        + (bootstrapServers == null ? "null" : Texts.quote(bootstrapServers)));
            }
            this.bootstrapServers = bootstrapServers;
            return this;
        }

        /**
         * Any producer property, overriding txbox's defaults ({@code linger.ms} {@value
         * #DEFAULT_LINGER_MS}, {@code batch.size} {@value #DEFAULT_BATCH_SIZE}, {@code
         * compression.type} {@value #DEFAULT_COMPRESSION}, {@code delivery.timeout.ms} {@value
         * #DEFAULT_DELIVERY_TIMEOUT_MS}, {@code request.timeout.ms} {@value
         * #DEFAULT_REQUEST_TIMEOUT_MS}, {@code max.block.ms} {@value #DEFAULT_MAX_BLOCK_MS},
         * {@code max.in.flight.requests.per.connection} 5). {@code enable.idempotence} must stay
         * true and {@code acks} must stay {@code all}; serializers are fixed.
         */
        public Builder property(String key, String value) {
            if (key == null || key.isBlank() || value == null) {
                throw new ConfigException("Kafka property key and value must be non-null, but were "
                        + (key == null ? "null" : Texts.quote(key)) + " = " + (value == null ? "null" : "<set>"));
            }
            if (key.equals(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG) && !value.equals("true")) {
                throw new ConfigException("Kafka property enable.idempotence must be true for the relay, but was " + Texts.quote(value));
            }
            if (key.equals(ProducerConfig.ACKS_CONFIG) && !(value.equals("all") || value.equals("-1"))) {
                throw new ConfigException("Kafka property acks must be all for the relay, but was " + Texts.quote(value));
            }
            if (key.equals(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
                throw new ConfigException("Kafka property transactional.id is set per lane by the relay; use strictFencing(prefix)");
            }
            if (key.equals(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG) || key.equals(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG)) {
                throw new ConfigException("Kafka property " + key + " is fixed by the relay (bytes)");
            }
            properties.put(key, value);
            return this;
        }

        /** {@link #property} for each entry. */
        public Builder properties(Map<String, String> properties) {
            Args.configured(properties, "properties");
            properties.forEach(this::property);
            return this;
        }

        /**
         * Turns on strict fencing (off by default): a relay that lost a lane publishes nothing
         * from it that a {@code read_committed} consumer can see. The rows of each lane in a
         * batch are sent in one Kafka transaction of a producer whose {@code transactional.id} is
         * {@code <transactionalIdPrefix>-lane-<n>} (n = 0..63). A relay that takes a lane over
         * starts that lane's producer, whose {@code initTransactions()} makes the broker abort the
         * previous owner's open transaction and refuse its later commits, so a relay frozen past
         * its lane lease (SIGSTOP, a long GC pause) and then resumed cannot publish its stale batch.
         *
         * <p>Requirements and costs: consumers must read with {@code isolation.level=read_committed}
         * (with the default {@code read_uncommitted} they also see aborted records); the prefix
         * must be the same for every relay instance on one outbox table and different for every
         * other outbox table that publishes to the same Kafka cluster; the broker needs
         * transactions (a transaction state log, so at least 3 brokers by default, or {@code
         * transaction.state.log.replication.factor} lowered). Each relay keeps up to one producer
         * per lane it owns (64 at most), and every batch ends with one transaction commit per lane
         * it touched, run in parallel; see docs/operations.md ("Kafka strict fencing") for the measured cost. While a relay is
         * frozen with a transaction open, {@code read_committed} consumers of the partitions it
         * wrote to wait until the lane is taken over (the lane lease) or the transaction times
         * out ({@code transaction.timeout.ms}, default 60 s).
         *
         * @param transactionalIdPrefix 1 to 200 characters of {@code [A-Za-z0-9._-]}
         */
        public Builder strictFencing(String transactionalIdPrefix) {
            Args.configured(transactionalIdPrefix, "transactionalIdPrefix");
            if (!transactionalIdPrefix.matches("[A-Za-z0-9._-]{1,200}")) {
                throw new ConfigException("strictFencing transactionalIdPrefix must be 1 to 200 characters of"
                        + " [A-Za-z0-9._-], but was " + Texts.quote(transactionalIdPrefix));
            }
            this.transactionalIdPrefix = transactionalIdPrefix;
            return this;
        }

        /**
         * Creates the producer. It connects lazily; a broker that is down shows up as retried
         * publishes, not as a failure here.
         *
         * @throws ConfigException if the properties are invalid
         */
        public KafkaPublisher build() {
            Map<String, Object> config = new LinkedHashMap<>();
            config.put(ProducerConfig.LINGER_MS_CONFIG, DEFAULT_LINGER_MS);
            config.put(ProducerConfig.BATCH_SIZE_CONFIG, DEFAULT_BATCH_SIZE);
            config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, DEFAULT_COMPRESSION);
            config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, DEFAULT_DELIVERY_TIMEOUT_MS);
            config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, DEFAULT_REQUEST_TIMEOUT_MS);
            config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, DEFAULT_MAX_BLOCK_MS);
            config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
            config.putAll(properties);
            if (bootstrapServers != null) {
                config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            }
            if (!config.containsKey(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG)) {
                throw new ConfigException("Kafka bootstrapServers is required");
            }
            config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            config.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "txbox-relay-" + Long.toHexString(System.nanoTime() & 0xffffff));
            return new KafkaPublisher(ProducerPublisher.open(config, transactionalIdPrefix));
        }
    }
}
