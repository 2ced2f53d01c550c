package io.txbox.bench;

import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The receiving side of e2e-latency: either txbox's own {@link KafkaInboxConsumer} (the default,
 * what a user runs) or the bench's plain {@link InboxConsumer} loop, both reporting each
 * first delivery right after its database commit.
 */
abstract class Receivers implements AutoCloseable {
    abstract long duplicates();

    /** txbox's consumer runner: {@code count} instances in one group, one thread each. */
    static Receivers library(String bootstrap, String topic, int count, int batchSize, DataSource ds, Inbox inbox,
            InboxConsumer.OnCommit onCommit)
            throws InterruptedException {
        AtomicLong dups = new AtomicLong();
        // the handler runs inside the inbox transaction; the listener hears the outcomes on the
        // same thread once that transaction committed, in delivery order, so the keys travel in a
        // thread-local queue (a batch's handler runs first, then its outcomes; only PROCESSED
        // ones ran the handler). A batch rolled back and run again record by record would leave
        // stale keys: the scenario has no failing handler, and lost/doubled are counted in SQL.
        ThreadLocal<java.util.ArrayDeque<String>> current = ThreadLocal.withInitial(java.util.ArrayDeque::new);
        ConsumerListener listener = new ConsumerListener() {
            @Override
            public void onOutcome(String consumer, Outcome.Status status, Duration took) {
                long now = System.nanoTime();
                String key = status == Outcome.Status.PROCESSED ? current.get().poll() : null;
                if (status == Outcome.Status.PROCESSED && key != null) {
                    onCommit.committed(key, true, now);
                } else if (status == Outcome.Status.DUPLICATE) {
                    dups.incrementAndGet();
                }
            }
        };
        List<KafkaInboxConsumer> consumers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            KafkaInboxConsumer c = KafkaInboxConsumer.builder(inbox, ds, (tx, message) -> {
                        Stages.handling(message.key());
                        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO business (message_key, amount) VALUES (?, ?)")) {
                            ps.setString(1, message.key());
                            ps.setLong(2, 1);
                            ps.executeUpdate();
                        }
                        current.get().add(message.key());
                        return null;
                    })
                    .bootstrapServers(bootstrap)
                    .topics(topic)
                    .groupId("bench-" + topic)
                    .consumerProperty("fetch.max.wait.ms", 100)
                    .consumerProperty("interceptor.classes", Stages.Polled.class.getName())
                    .listener(listener)
                    .batchSize(batchSize)
                    .build();
            c.start();
            consumers.add(c);
        }
        Duration settle = KafkaAdmin.awaitGroupStable(bootstrap, "bench-" + topic, count, 4, Duration.ofSeconds(60));
        Scenario.log("consumer group stable with %d members after %d ms", count, settle.toMillis());
        return new Receivers() {
            @Override
            long duplicates() {
                return dups.get();
            }

            @Override
            public void close() {
                consumers.forEach(KafkaInboxConsumer::close);
            }
        };
    }

    /** The bench's own loop: fixed partition assignment, no group rebalance. */
    static Receivers plain(String bootstrap, String topic, int count, DataSource ds, Inbox inbox, InboxConsumer.OnCommit onCommit)
            throws InterruptedException {
        InboxConsumer c = new InboxConsumer(bootstrap, topic, 4, count, ds, inbox, true, onCommit);
        c.awaitAssigned(Duration.ofSeconds(30));
        return new Receivers() {
            @Override
            long duplicates() {
                return c.duplicates.get();
            }

            @Override
            public void close() throws InterruptedException {
                c.close();
            }
        };
    }
}
