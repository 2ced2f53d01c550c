package io.txbox.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.IntConsumer;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The idempotent consumer a careful engineer writes by hand with kafka-clients or amqp-client,
 * the baseline {@code ratio_to_by_hand} compares txbox's consumers with. Per message it sends
 * exactly the statements txbox's consumer sends for a first delivery on the database, the inbox
 * receive captured from txbox ({@link InboxReplay}), the same business insert and the commit:
 * on PostgreSQL each commit goes with the next message's receive in one round trip
 * ({@code COMMIT; BEGIN; ...}), as txbox chains them; on MariaDB, which txbox does not chain, the
 * commit goes alone. It follows txbox's offset and ack discipline: Kafka offsets committed
 * asynchronously after each poll, each partition's records of a poll on one connection;
 * RabbitMQ on one channel with the same prefetch, acked after the commit (on PostgreSQL a worker
 * chains whatever the channel has delivered and acks it with one multiple ack, as txbox does; on
 * MariaDB each delivery runs on the client's thread and is acked alone). No key policy, retries,
 * dead letters, rebalance handling or listener: what those cost is the gap between the two.
 */
final class ConsumerByHand {
    private static final Duration POLL = Duration.ofMillis(500);
    private static final Duration WORKER_POLL = Duration.ofMillis(200);

    /** One message as the broker delivered it: its idempotency key and body. */
    private record Message(String key, byte[] body) {}

    /** A RabbitMQ delivery waiting for the worker: its tag and message. */
    private record Delivered(long tag, Message message) {}

    private final String consumer;
    private final DataSource ds;
    private final InboxReplay replay;
    private final BiConsumer<Connection, String> insert;
    private final IntConsumer handled;

    /**
     * Runs messages as {@code consumer} on {@code ds}: {@code replay}'s receive, then {@code insert}
     * for a first delivery, one transaction each; {@code handled} hears each committed message.
     */
    ConsumerByHand(String consumer, DataSource ds, InboxReplay replay, BiConsumer<Connection, String> insert,
            IntConsumer handled) {
        this.consumer = consumer;
        this.ds = ds;
        this.replay = replay;
        this.insert = insert;
        this.handled = handled;
    }

    /**
     * The receive txbox's consumer sends, and the chained one where it chains its commits: from
     * two messages run through {@code Inbox.processChained} on a recorded connection (committed,
     * under a consumer of their own).
     */
    static InboxReplay capture(BenchEnv env) {
        Inbox inbox = Inbox.builder("capture").tables(env.tables).build();
        SqlRecorder rec = new SqlRecorder();
        inbox.processChained(rec.wrap((DataSource) env.pool("capture", 1, false)),
                List.of(InboundMessage.of("capture-1", new byte[0]), InboundMessage.of("capture-2", new byte[0])),
                (tx, m) -> null, o -> true);
        return InboxReplay.ofChain(env, rec.prepared);
    }

    /**
     * Runs {@code messages} in order on one connection, one transaction each; {@code handled}
     * hears each once its commit went through.
     */
    private void run(List<Message> messages, MessageDigest sha) {
        try (Connection c = ds.getConnection()) {
            boolean open = false; // a first delivery's transaction, its commit not yet sent
            for (Message m : messages) {
                byte[] fp = sha.digest(m.body());
                boolean first;
                if (open && replay.chainsCommits()) {
                    first = replay.commitAndReceive(c, consumer, m.key(), fp);
                    handled.accept(1); // the previous message's COMMIT went through
                } else {
                    first = replay.receive(c, consumer, m.key(), fp);
                }
                if (!first) {
                    c.rollback(); // a duplicate: nothing to do
                    handled.accept(1);
                    open = false;
                    continue;
                }
                insert.accept(c, m.key());
                open = replay.chainsCommits();
                if (!open) {
                    c.commit();
                    handled.accept(1);
                }
            }
            if (open) {
                c.commit();
                handled.accept(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** kafka-clients by hand on {@code topic}, in group {@code consumer}; stops on close. */
    AutoCloseable kafka(String bootstrap, String topic, int maxPollRecords) {
        Properties p = KafkaAdmin.consumerProps(bootstrap, consumer);
        p.put("max.poll.records", Integer.toString(maxPollRecords));
        Stoppable loop = new Stoppable("bench-by-hand-kafka");
        loop.start(() -> {
            MessageDigest sha = sha256();
            try (KafkaConsumer<byte[], byte[]> kafka = new KafkaConsumer<>(p)) {
                kafka.subscribe(List.of(topic));
                while (loop.running) {
                    ConsumerRecords<byte[], byte[]> records = kafka.poll(POLL);
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (TopicPartition tp : records.partitions()) {
                        List<ConsumerRecord<byte[], byte[]>> list = records.records(tp);
                        List<Message> messages = new ArrayList<>(list.size());
                        for (ConsumerRecord<byte[], byte[]> r : list) {
                            messages.add(new Message(new String(r.headers().lastHeader("idempotency-key").value(),
                                    StandardCharsets.UTF_8), r.value()));
                        }
                        run(messages, sha);
                        offsets.put(tp, new OffsetAndMetadata(list.get(list.size() - 1).offset() + 1));
                    }
                    if (!offsets.isEmpty()) {
                        kafka.commitAsync(offsets, null); // a lost commit only redelivers; the inbox dedups
                    }
                }
            }
        });
        return loop;
    }

    /** amqp-client by hand on {@code queue}, one channel with {@code prefetch}; stops on close. */
    AutoCloseable rabbit(ConnectionFactory factory, String queue, int prefetch) throws Exception {
        com.rabbitmq.client.Connection connection = factory.newConnection("bench-by-hand-rabbit");
        Channel ch = connection.createChannel();
        ch.basicQos(prefetch);
        Stoppable worker = new Stoppable("bench-by-hand-rabbit");
        BlockingQueue<Delivered> waiting = new LinkedBlockingQueue<>();
        if (replay.chainsCommits()) {
            worker.start(() -> {
                MessageDigest sha = sha256();
                List<Delivered> batch = new ArrayList<>(prefetch);
                while (worker.running) {
                    Delivered head = waiting.poll(WORKER_POLL.toMillis(), TimeUnit.MILLISECONDS);
                    if (head == null) {
                        continue;
                    }
                    batch.add(head);
                    waiting.drainTo(batch, prefetch - 1);
                    List<Message> messages = new ArrayList<>(batch.size());
                    for (Delivered d : batch) {
                        messages.add(d.message());
                    }
                    run(messages, sha);
                    ch.basicAck(batch.get(batch.size() - 1).tag(), true);
                    batch.clear();
                }
            });
        }
        MessageDigest sha = sha256(); // deliveries of one channel arrive one at a time
        // held by a delivery run on the client's thread, so closing waits for its ack
        Object busy = new Object();
        boolean[] closed = {false};
        ch.basicConsume(queue, false, new DefaultConsumer(ch) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                    throws java.io.IOException {
                Message m = new Message(String.valueOf(props.getHeaders().get("idempotency-key")), body);
                if (replay.chainsCommits()) {
                    waiting.add(new Delivered(envelope.getDeliveryTag(), m));
                    return;
                }
                synchronized (busy) {
                    if (!closed[0]) {
                        run(List.of(m), sha);
                        ch.basicAck(envelope.getDeliveryTag(), false);
                    }
                }
            }
        });
        return () -> {
            synchronized (busy) {
                closed[0] = true;
            }
            worker.close();
            connection.close();
        };
    }

    /** A loop on a thread of its own until closed. */
    private static final class Stoppable implements AutoCloseable {
        private final String name;
        volatile boolean running = true;
        private Thread thread;

        Stoppable(String name) {
            this.name = name;
        }

        void start(Body body) {
            thread = new Thread(() -> {
                try {
                    body.run();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, name);
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            if (thread != null) {
                thread.join();
            }
        }
    }

    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }
}
