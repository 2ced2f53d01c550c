package io.txbox.relay.kafka;

import io.txbox.internal.Args;
import io.txbox.ConfigException;
import io.txbox.relay.internal.TargetNames;
import io.txbox.Texts;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 */
public final class KafkaPublisher implements Publisher {
    /** Broker tag in metrics: {@value}. */
    public static final String BROKER = "kafka";
    /** Default {@code linger.ms}: {@value}. Measured: 5 ms fills batches at relay rates without adding visible latency. */
    public static final String DEFAULT_LINGER_MS = "5";
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

    private static final Logger log = LoggerFactory.getLogger(KafkaPublisher.class);

    private final Producer<byte[], byte[]> producer;
    private final boolean ownsProducer;
    private final String name;
    private final Set<String> topics = ConcurrentHashMap.newKeySet();
    /** Strict fencing: the per-lane transactional producers, or null for the plain idempotent producer. */
    private final @Nullable LaneTransactions lanes;

    private KafkaPublisher(Producer<byte[], byte[]> producer, boolean ownsProducer, String name, @Nullable LaneTransactions lanes) {
        this.producer = producer;
        this.ownsProducer = ownsProducer;
        this.name = name;
        this.lanes = lanes;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Wraps a producer the caller owns and configured (it must be idempotent with {@code
     * acks=all} for the ordering guarantee); {@link #close()} leaves it open.
     */
    public static KafkaPublisher of(Producer<byte[], byte[]> producer) {
        if (producer == null) {
            throw new ConfigException("producer must not be null");
        }
        return new KafkaPublisher(producer, false, "external", null);
    }

    /** A route to {@code topic} through this publisher. */
    public Route topic(String topic) {
        TargetNames.kafkaTopic(topic);
        topics.add(topic);
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
        Map<String, String> headers = r.headers();
        List<Header> kafkaHeaders = new ArrayList<>(headers.size());
        headers.forEach((k, v) -> kafkaHeaders.add(new RecordHeader(k, v.getBytes(StandardCharsets.UTF_8))));
        byte[] key = r.routingKey() == null ? null : r.routingKey().getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(target, null, key, r.payload(), kafkaHeaders);
        if (lanes != null) {
            return lanes.publish(record, r, target);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            producer.send(record, (metadata, e) -> {
                if (e == null) {
                    done.complete(null);
                } else {
                    done.completeExceptionally(translate(target, e));
                }
            });
        } catch (RuntimeException e) {
            done.completeExceptionally(translate(target, e));
        }
        return done;
    }

    static PublishException translate(String topic, Throwable e) {
        String what = "Kafka topic " + topic + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
        boolean permanent = e instanceof RecordTooLargeException || e instanceof RecordBatchTooLargeException
                || e instanceof InvalidTopicException || e instanceof SerializationException;
        return permanent ? PublishException.permanent(what, e) : PublishException.retryable(what, e);
    }

    /**
     * Sends the batch's last records now instead of after {@code linger.ms}: the relay waits for
     * every confirmation right after this call anyway. Blocks until the records sent so far (by
     * any worker sharing this producer) are acknowledged or failed, at most {@code
     * delivery.timeout.ms}.
     */
    @Override
    public void endOfBatch() {
        if (lanes != null) {
            lanes.endOfBatch();
        } else {
            producer.flush();
        }
    }

    /** Whether this publisher runs in strict fencing mode ({@link Builder#strictFencing}). */
    public boolean strictFencing() {
        return lanes != null;
    }

    @Override
    public void check(Duration timeout) {
        Args.notNull(timeout, "timeout");
        String topic = topics.stream().findFirst().orElse(null);
        if (topic == null) {
            return;
        }
        try {
            CompletableFuture.supplyAsync(() -> producer.partitionsFor(topic)).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw PublishException.retryable("Kafka not reachable (metadata for " + topic + "): " + e, e);
        }
    }

    @Override
    public void close() {
        if (lanes != null) {
            lanes.close();
        }
        if (ownsProducer) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (KafkaException e) {
                log.warn("[{}] closing the Kafka producer failed: {}", name, e.toString());
            }
        }
    }

    @Override
    public String toString() {
        return "KafkaPublisher[" + name + "]";
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
         * it touched, run in parallel; see the README for the measured cost. While a relay is
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
            try {
                String name = String.valueOf(config.get(ProducerConfig.CLIENT_ID_CONFIG));
                LaneTransactions lanes = transactionalIdPrefix == null ? null
                        : new LaneTransactions(transactionalIdPrefix, config, LaneTransactions::kafkaProducer);
                return new KafkaPublisher(new KafkaProducer<>(config), true, name, lanes);
            } catch (KafkaException e) {
                throw new ConfigException("Kafka producer config rejected: " + e.getMessage()
                        + (e.getCause() != null ? " (" + e.getCause().getMessage() + ")" : ""));
            }
        }
    }
}
