package io.txbox.relay.kafka;

import io.txbox.ConfigException;
import io.txbox.internal.Args;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
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
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link KafkaPublisher} does, behind it so that the public class names no Kafka type the
 * JVM must load to verify it: without kafka-clients, {@code KafkaPublisher.builder()} can then
 * say which artifact to add instead of failing with {@code NoClassDefFoundError}.
 */
final class ProducerPublisher {
    private static final Logger log = LoggerFactory.getLogger(ProducerPublisher.class);

    private final Producer<byte[], byte[]> producer;
    private final boolean ownsProducer;
    private final String name;
    private final Set<String> topics = ConcurrentHashMap.newKeySet();
    /** Strict fencing: the per-lane transactional producers, or null for the plain idempotent producer. */
    private final @Nullable LaneTransactions lanes;
    /**
     * Whether records may wait in the producer ({@code linger.ms} above 0, or unknown): only then
     * does the end of a batch need {@code flush()}, which also waits for the records other
     * workers sent meanwhile.
     */
    private final boolean lingers;

    ProducerPublisher(Producer<byte[], byte[]> producer, boolean ownsProducer, String name, @Nullable LaneTransactions lanes,
            boolean lingers) {
        this.producer = producer;
        this.ownsProducer = ownsProducer;
        this.name = name;
        this.lanes = lanes;
        this.lingers = lingers;
    }

    /** Around a producer the caller owns. */
    static ProducerPublisher external(Producer<byte[], byte[]> producer) {
        return new ProducerPublisher(producer, false, "external", null, true);
    }

    /** Creates the producer (and the lane producers' factory for strict fencing) from a complete config. */
    static ProducerPublisher open(Map<String, Object> config, @Nullable String transactionalIdPrefix) {
        try {
            String name = String.valueOf(config.get(ProducerConfig.CLIENT_ID_CONFIG));
            LaneTransactions lanes = transactionalIdPrefix == null ? null
                    : new LaneTransactions(transactionalIdPrefix, config, LaneTransactions::kafkaProducer);
            return new ProducerPublisher(new KafkaProducer<>(config), true, name, lanes, lingers(config));
        } catch (KafkaException e) {
            throw new ConfigException("Kafka producer config rejected: " + e.getMessage()
                    + (e.getCause() != null ? " (" + e.getCause().getMessage() + ")" : ""));
        }
    }

    /** Whether {@code config} lets records wait for {@code linger.ms}; a value Kafka will reject counts as yes. */
    static boolean lingers(Map<String, Object> config) {
        try {
            return Long.parseLong(String.valueOf(config.get(ProducerConfig.LINGER_MS_CONFIG)).trim()) != 0;
        } catch (NumberFormatException e) {
            return true;
        }
    }

    void addTopic(String topic) {
        topics.add(topic);
    }

    CompletionStage<Void> publish(String target, PublishRecord r) {
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

    void endOfBatch() {
        if (lanes != null) {
            lanes.endOfBatch();
        } else if (lingers) {
            producer.flush();
        }
    }

    boolean strictFencing() {
        return lanes != null;
    }

    void check(Duration timeout) {
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

    void close() {
        if (lanes != null) {
            lanes.close();
        }
        if (ownsProducer) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (KafkaException e) {
                log.warn("{} - closing the Kafka producer failed: {}", name, e.toString());
            }
        }
    }

    String name() {
        return name;
    }
}
