package io.txbox.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Topic creation and reading a topic back to check that nothing was lost. */
final class KafkaAdmin {
    private KafkaAdmin() {}

    static void createTopic(String bootstrap, String topic, int partitions) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new IllegalStateException("creating topic " + topic + " failed", e.getCause());
            }
        } catch (InterruptedException | TimeoutException e) {
            throw new IllegalStateException("creating topic " + topic + " failed", e);
        }
    }

    /**
     * Waits until consumer group {@code group} is stable with {@code members} members that hold
     * {@code partitions} partitions between them; returns how long that took. With the classic
     * group protocol every member that joins stops the whole group for up to a heartbeat
     * interval (3 s), which a latency measurement must not include.
     */
    static Duration awaitGroupStable(String bootstrap, String group, int members, int partitions, Duration timeout) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        long t0 = System.nanoTime();
        long end = t0 + timeout.toNanos();
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < end) {
                try {
                    var d = admin.describeConsumerGroups(List.of(group)).all().get(10, TimeUnit.SECONDS).get(group);
                    int assigned = 0;
                    for (var m : d.members()) {
                        assigned += m.assignment().topicPartitions().size();
                    }
                    if (d.groupState() == org.apache.kafka.common.GroupState.STABLE && d.members().size() == members
                            && assigned == partitions) {
                        return Duration.ofNanos(System.nanoTime() - t0);
                    }
                } catch (ExecutionException | TimeoutException e) {
                    // the group does not exist yet
                }
                Thread.sleep(200);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new IllegalStateException("consumer group " + group + " did not become stable with " + members
                + " members within " + timeout);
    }

    /**
     * Waits until consumer group {@code group} has committed the end offset of every partition of
     * {@code topic}: every record on the topic, redeliveries included, has been consumed. Returns
     * false if that did not happen within {@code timeout}.
     */
    static boolean awaitCaughtUp(String bootstrap, String group, String topic, Duration timeout) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        long end = System.nanoTime() + timeout.toNanos();
        try (Admin admin = Admin.create(p);
                KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(consumerProps(bootstrap, group + "-lag"),
                        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo info : reader.partitionsFor(topic, Duration.ofSeconds(30))) {
                parts.add(new TopicPartition(topic, info.partition()));
            }
            while (System.nanoTime() < end) {
                Map<TopicPartition, Long> ends = reader.endOffsets(parts);
                var committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                        .get(10, TimeUnit.SECONDS);
                boolean caughtUp = true;
                for (TopicPartition tp : parts) {
                    long last = ends.getOrDefault(tp, 0L);
                    var at = committed.get(tp);
                    caughtUp &= last == 0 || at != null && at.offset() >= last;
                }
                if (caughtUp) {
                    return true;
                }
                Thread.sleep(200);
            }
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("reading the offsets of group " + group + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    /** A producer that fills a topic for the consumers to read: acks from all replicas, 5 ms linger. */
    static KafkaProducer<byte[], byte[]> fillProducer(String bootstrap) {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.ACKS_CONFIG, "all");
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static Properties consumerProps(String bootstrap, String groupId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
        if (groupId != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        }
        return p;
    }

    /**
     * Reads {@code topic} from the beginning until {@code expected} distinct idempotency keys
     * were seen or nothing new arrived for {@code idle}.
     */
    static ReadBack readBack(String bootstrap, String topic, Set<String> expectedKeys, long expected, Duration idle) {
        return readBack(bootstrap, topic, expectedKeys, expected, idle, r -> {});
    }

    /** {@link #readBack}, showing {@code visit} every record in partition order. */
    static ReadBack readBack(String bootstrap, String topic, Set<String> expectedKeys, long expected, Duration idle,
            Consumer<ConsumerRecord<byte[], byte[]>> visit) {
        Set<String> seen = new HashSet<>((int) Math.min(Integer.MAX_VALUE, expected * 2));
        long total = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(bootstrap, null))) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                parts.add(new TopicPartition(topic, pi.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long lastNew = System.nanoTime();
            while (seen.size() < expected && System.nanoTime() - lastNew < idle.toNanos()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    total++;
                    visit.accept(r);
                    String key = stepKey(r);
                    if (key != null && seen.add(key)) {
                        lastNew = System.nanoTime();
                    }
                }
            }
            // whatever is still in flight after the target was reached counts as duplicates
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);
            for (TopicPartition tp : parts) {
                long left = end.get(tp) - consumer.position(tp);
                total += Math.max(0, left);
            }
        }
        long missing = 0;
        if (expectedKeys != null) {
            for (String k : expectedKeys) {
                if (!seen.contains(k)) {
                    missing++;
                }
            }
        } else {
            missing = Math.max(0, expected - seen.size());
        }
        return new ReadBack(total, seen.size(), missing);
    }

    static String stepKey(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader("idempotency-key");
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** What came back: all records, distinct step keys, and keys expected but never seen. */
    record ReadBack(long records, long distinct, long lost) {
        long duplicates() {
            return records - distinct;
        }
    }
}
