package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Kafka plumbing for the oracle: topics with settings, reading a whole topic back, group lag. */
final class Topics {
    private Topics() {}

    static void create(String bootstrap, String topic, int partitions, Map<String, String> config) {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(config))).all()
                    .get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot create topic " + topic + ": " + e, e);
        }
    }

    static KafkaConsumer<byte[], byte[]> reader(String bootstrap) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Reads {@code topic} from the start until {@code done} holds for all records read so far. */
    static List<ConsumerRecord<byte[], byte[]>> readUntil(String bootstrap, String topic,
            Predicate<List<ConsumerRecord<byte[], byte[]>>> done, Duration timeout) {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = reader(bootstrap)) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
                c.poll(Duration.ofMillis(200)).forEach(records::add);
                return done.test(records);
            });
        }
        return records;
    }

    /** The {@code name} header of each record (null when absent), in the order read. */
    static List<String> header(List<ConsumerRecord<byte[], byte[]>> records, String name) {
        List<String> values = new ArrayList<>(records.size());
        for (ConsumerRecord<byte[], byte[]> r : records) {
            Header h = r.headers().lastHeader(name);
            values.add(h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
        }
        return values;
    }

    /** Step keys delivered on {@code topic}, read until every one of {@code expected} was seen. */
    static List<String> deliveredStepKeys(String bootstrap, String topic, Set<String> expected, Duration timeout) {
        return header(delivered(bootstrap, topic, expected, timeout), "idempotency-key");
    }

    /** The records on {@code topic}, read until every step key of {@code expected} was seen. */
    static List<ConsumerRecord<byte[], byte[]>> delivered(String bootstrap, String topic, Set<String> expected,
            Duration timeout) {
        return readUntil(bootstrap, topic,
                rs -> header(rs, "idempotency-key").stream().filter(expected::contains).collect(Collectors.toSet())
                        .size() == expected.size(), timeout);
    }

    /** The per-key order oracle fed the {@link Feeder} payloads of {@code records}, partition by partition in offset order. */
    static KeyOrder keyOrder(List<ConsumerRecord<byte[], byte[]>> records) {
        KeyOrder order = new KeyOrder();
        records.forEach(r -> Feeder.add(order, new String(r.value(), StandardCharsets.UTF_8)));
        return order;
    }

    /** Waits until {@code group} has committed the end offset of every partition of {@code topic}. */
    static void awaitCaughtUp(String bootstrap, String group, String topic, Duration timeout) {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
                KafkaConsumer<byte[], byte[]> c = reader(bootstrap)) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            await().atMost(timeout).pollInterval(Duration.ofMillis(200)).until(() -> {
                Map<TopicPartition, Long> ends = c.endOffsets(parts);
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
                return parts.stream().allMatch(tp -> {
                    OffsetAndMetadata o = committed.get(tp);
                    long end = ends.getOrDefault(tp, 0L);
                    return end == 0 || o != null && o.offset() >= end;
                });
            });
        }
    }
}
