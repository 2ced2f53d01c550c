package io.txbox.relay;

import static org.awaitility.Awaitility.await;

import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads a whole topic back from the beginning, for checking what the relay published. */
final class Consumed implements AutoCloseable {
    private final KafkaConsumer<byte[], byte[]> consumer;
    final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();

    Consumed(String bootstrap, String topic) {
        this(bootstrap, topic, false);
    }

    /** With {@code readCommitted}, reads as {@code isolation.level=read_committed}: aborted transactions stay unseen. */
    Consumed(String bootstrap, String topic, boolean readCommitted) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        List<TopicPartition> parts = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
        consumer.assign(parts);
        consumer.seekToBeginning(parts);
    }

    /**
     * Polls until records with at least {@code n} distinct step keys were read: a redelivered
     * duplicate does not count, so it cannot stand in for a lost row.
     */
    Consumed awaitStepKeys(int n, Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            return stepKeys().size() >= n;
        });
        return this;
    }

    /** Polls until at least {@code n} records were read, duplicates included: for an expected republish. */
    Consumed awaitRecords(int n, Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            return records.size() >= n;
        });
        return this;
    }

    /** Polls until every partition is read up to its end offset (the last stable offset when read_committed). */
    List<ConsumerRecord<byte[], byte[]>> drainToEnd(Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            Map<TopicPartition, Long> end = consumer.endOffsets(consumer.assignment());
            return end.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue());
        });
        return records;
    }

    /** Polls a little more and returns everything read. */
    List<ConsumerRecord<byte[], byte[]>> settle() {
        for (int i = 0; i < 5; i++) {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
        }
        return records;
    }

    static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    static String key(ConsumerRecord<byte[], byte[]> r) {
        return r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
    }

    static String value(ConsumerRecord<byte[], byte[]> r) {
        return new String(r.value(), StandardCharsets.UTF_8);
    }

    /**
     * Every record read, in arrival order, fed to the per-key order oracle: the record key, and the
     * number the payload holds as its place in the key's order. Repeats count as duplicates.
     */
    KeyOrder keyOrder() {
        KeyOrder order = new KeyOrder();
        for (var r : records) {
            order.add(key(r), Long.parseLong(value(r)));
        }
        return order;
    }

    java.util.Set<String> stepKeys() {
        return records.stream().map(r -> header(r, "idempotency-key")).collect(Collectors.toSet());
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(2));
    }
}
