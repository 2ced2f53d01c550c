package io.txbox.bench;

import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.internal.Connections;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The receiving service: Kafka consumers that run each record through the inbox in its own
 * transaction (receive, then the business insert when it is the first delivery, then commit),
 * and commit offsets only after the database commit. A failure throws the consumer away and
 * starts again from the committed offsets, so a redelivery is absorbed by the inbox.
 *
 * <p>Each thread is assigned a fixed share of the partitions (no group rebalances to wait for);
 * the group id is only used to store offsets.
 */
final class InboxConsumer implements AutoCloseable {
    /** Called after the receiving transaction committed, on the consumer thread. */
    interface OnCommit {
        void committed(String key, boolean first, long commitNanos);
    }

    final AtomicLong first = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    final AtomicLong errors = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong assigned = new AtomicLong();

    InboxConsumer(String bootstrap, String topic, int partitions, int consumers, DataSource ds, Inbox inbox, OnCommit onCommit) {
        this(bootstrap, topic, partitions, consumers, ds, inbox, false, onCommit);
    }

    /** With {@code staged}, each record's poll and handler start are stamped for {@link Stages}. */
    InboxConsumer(String bootstrap, String topic, int partitions, int consumers, DataSource ds, Inbox inbox, boolean staged,
            OnCommit onCommit) {
        String group = "bench-" + topic;
        for (int i = 0; i < consumers; i++) {
            List<TopicPartition> mine = new ArrayList<>();
            for (int p = i; p < partitions; p += consumers) {
                mine.add(new TopicPartition(topic, p));
            }
            Thread t = new Thread(() -> loop(bootstrap, group, mine, ds, inbox, staged, onCommit), "inbox-consumer-" + i);
            t.setDaemon(true);
            threads.add(t);
        }
        threads.forEach(Thread::start);
    }

    /** Waits until every consumer has its partitions and a position. */
    void awaitAssigned(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (assigned.get() < threads.size() && System.nanoTime() < end) {
            Thread.sleep(20);
        }
    }

    private void loop(String bootstrap, String group, List<TopicPartition> parts, DataSource ds, Inbox inbox, boolean staged,
            OnCommit onCommit) {
        Properties p = KafkaAdmin.consumerProps(bootstrap, group);
        p.put("max.poll.records", "500");
        p.put("fetch.max.wait.ms", "100");
        if (staged) {
            p.put("interceptor.classes", Stages.Polled.class.getName());
        }
        boolean counted = false;
        while (running.get()) {
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
                consumer.assign(parts);
                Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new java.util.HashSet<>(parts));
                for (TopicPartition tp : parts) {
                    OffsetAndMetadata om = committed.get(tp);
                    if (om != null) {
                        consumer.seek(tp, om.offset());
                    } else {
                        consumer.seekToBeginning(List.of(tp));
                    }
                    consumer.position(tp);
                }
                if (!counted) {
                    assigned.incrementAndGet();
                    counted = true;
                }
                try (Connection c = ds.getConnection()) {
                    c.setAutoCommit(false);
                    while (running.get()) {
                        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                        if (records.isEmpty()) {
                            continue;
                        }
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (ConsumerRecord<byte[], byte[]> r : records) {
                            String key = KafkaAdmin.stepKey(r);
                            if (key != null) {
                                if (staged) {
                                    Stages.handling(key);
                                }
                                receive(c, inbox, key, r.value(), onCommit);
                            }
                            offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        }
                        consumer.commitSync(offsets);
                    }
                }
            } catch (Exception e) {
                errors.incrementAndGet();
                if (running.get()) {
                    if (errors.get() % 50 == 1) {
                        System.err.println("consumer restarting after: " + e);
                    }
                    Backlog.sleep(200);
                }
            }
        }
    }

    private void receive(Connection c, Inbox inbox, String key, byte[] payload, OnCommit onCommit) throws SQLException {
        boolean isFirst;
        try {
            // without an inbox this is the bare pipeline e2e-latency compares against: insert, commit, then the offsets
            isFirst = inbox == null || inbox.receive(c, InboundMessage.of(key, payload)).isFirst();
            if (isFirst) {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO business (message_key, amount) VALUES (?, ?)")) {
                    ps.setString(1, key);
                    ps.setLong(2, 1);
                    ps.executeUpdate();
                }
            }
            c.commit();
        } catch (SQLException | RuntimeException e) {
            Connections.rollbackQuietly(c); // a failed rollback is a broken connection: the consumer starts over
            throw e;
        }
        long now = System.nanoTime();
        (isFirst ? first : duplicates).incrementAndGet();
        onCommit.committed(key, isFirst, now);
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        for (Thread t : threads) {
            t.join(10_000);
        }
    }
}
