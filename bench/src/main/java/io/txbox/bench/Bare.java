package io.txbox.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import io.txbox.outbox.OutboxMessage;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The bare clients a relay scenario is measured against in the same run: the same messages
 * (step key, routing key, payload, the relay's two key headers) published straight from memory
 * to the same broker, with no database in the loop. The relay can at best match it; {@code
 * ratio_to_bare} says how close it comes on this machine, at this moment.
 */
final class Bare {
    /** One message as the relay would publish it. */
    record Msg(String stepKey, String originalKey, String routingKey, byte[] payload) {}

    /** Rate of the best try and what each try gave. */
    record Result(double msgsPerSec, String detail) {}

    /** Records the bare producer keeps unacknowledged at most: {@value}. */
    static final int KAFKA_IN_FLIGHT = 16_384;

    /** Rounds of sending again what failed before the bare Kafka side gives up: {@value}. */
    static final int MAX_ROUNDS = 5;

    private Bare() {}

    /** The outbox rows of {@code destination} in id order, read before the relay takes them. */
    static List<Msg> snapshot(BenchEnv env, String destination) throws SQLException {
        List<Msg> out = new ArrayList<>();
        try (java.sql.Connection c = env.adminConnection();
                PreparedStatement ps = c.prepareStatement("SELECT step_key, original_key, routing_key, payload FROM "
                        + env.outboxTable() + " WHERE destination = ? ORDER BY id")) {
            ps.setString(1, destination);
            ps.setFetchSize(10_000);
            c.setAutoCommit(false);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Msg(rs.getString(1), rs.getString(2), rs.getString(3), rs.getBytes(4)));
                }
            }
            c.commit();
        }
        return out;
    }

    /** The messages {@link Backlog#message} writes for rows {@code [0, n)}: same keys, same-size random payloads. */
    static List<Msg> generated(long n, String destination, int payloadSize) {
        List<Msg> out = new ArrayList<>((int) n);
        byte[] size = new byte[payloadSize];
        for (long i = 0; i < n; i++) {
            OutboxMessage m = Backlog.message(i, destination, size);
            out.add(new Msg(m.stepKey().value(), m.stepKey().original(), m.routingKey(), m.payload()));
        }
        return out;
    }

    /** A producer with the relay's settings: idempotent, {@code acks=all}, {@link KafkaPublisher}'s defaults, {@code overrides}. */
    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, String> overrides) {
        Map<String, Object> config = new LinkedHashMap<>();
        config.put(ProducerConfig.LINGER_MS_CONFIG, KafkaPublisher.DEFAULT_LINGER_MS);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, KafkaPublisher.DEFAULT_BATCH_SIZE);
        config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, KafkaPublisher.DEFAULT_COMPRESSION);
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, KafkaPublisher.DEFAULT_DELIVERY_TIMEOUT_MS);
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, KafkaPublisher.DEFAULT_REQUEST_TIMEOUT_MS);
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, KafkaPublisher.DEFAULT_MAX_BLOCK_MS);
        config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        config.putAll(overrides);
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "txbox-bench-bare");
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** {@code m} as the relay's Kafka record: the routing key as the record key, the two key headers. */
    static ProducerRecord<byte[], byte[]> record(String topic, Msg m) {
        List<Header> headers = List.of(
                new RecordHeader(OutboxMessage.IDEMPOTENCY_KEY_HEADER, m.stepKey().getBytes(StandardCharsets.UTF_8)),
                new RecordHeader(OutboxMessage.ORIGINAL_KEY_HEADER, m.originalKey().getBytes(StandardCharsets.UTF_8)));
        byte[] key = m.routingKey() == null ? null : m.routingKey().getBytes(StandardCharsets.UTF_8);
        return new ProducerRecord<>(topic, null, key, m.payload(), headers);
    }

    /** Publishes {@code m} as the relay does: persistent, mandatory, message id and key headers. */
    static void publish(Channel ch, String exchange, Msg m, Date now) throws java.io.IOException {
        Map<String, Object> headers = new HashMap<>();
        headers.put(OutboxMessage.IDEMPOTENCY_KEY_HEADER, m.stepKey());
        headers.put(OutboxMessage.ORIGINAL_KEY_HEADER, m.originalKey());
        headers.put(RabbitPublisher.IDEMPOTENCY_HEADER, m.stepKey());
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().deliveryMode(2).messageId(m.stepKey())
                .timestamp(now).headers(headers).build();
        ch.basicPublish(exchange, m.routingKey() == null ? "" : m.routingKey(), true, props, m.payload());
    }

    /**
     * A {@link KafkaProducer} with the relay's producer settings (idempotent, {@code acks=all},
     * {@link KafkaPublisher}'s documented defaults, the run's overrides) sends every message
     * to {@code topic}, then flushes; the rate counts until the last acknowledgement. At most
     * {@value #KAFKA_IN_FLIGHT} records wait for their acknowledgement, so a slow broker holds
     * the loop back instead of expiring records queued in the producer.
     */
    static Result kafka(String bootstrap, String topic, List<Msg> msgs, Map<String, String> overrides) throws Exception {
        AtomicReference<Exception> lastError = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, overrides)) {
            // metadata with a leader for every partition before the clock starts, as the relay has it after its warm-up
            long ready = System.nanoTime() + 30_000_000_000L;
            while (p.partitionsFor(topic).stream().anyMatch(i -> i.leader() == null || i.leader().isEmpty())
                    && System.nanoTime() < ready) {
                Thread.sleep(100);
            }
            Semaphore free = new Semaphore(KAFKA_IN_FLIGHT);
            long t0 = System.nanoTime();
            List<Msg> todo = msgs;
            long resent = 0;
            // like the relay, send again what failed (a loaded broker expires records), a few rounds at most
            for (int round = 0; !todo.isEmpty(); round++) {
                if (round == MAX_ROUNDS) {
                    throw new IllegalStateException("bare Kafka producer: " + todo.size() + " of " + msgs.size()
                            + " still unacknowledged after " + MAX_ROUNDS + " rounds", lastError.get());
                }
                resent += round == 0 ? 0 : todo.size();
                java.util.Queue<Msg> failed = new java.util.concurrent.ConcurrentLinkedQueue<>();
                for (Msg m : todo) {
                    free.acquire();
                    p.send(record(topic, m), (md, e) -> {
                        free.release();
                        if (e != null) {
                            lastError.set(e);
                            failed.add(m);
                        }
                    });
                }
                p.flush();
                todo = new ArrayList<>(failed);
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            double rate = msgs.size() / secs;
            return new Result(rate, String.format("bare KafkaProducer: %,d msgs in %.2f s (%,d sent again after an error)",
                    msgs.size(), secs, resent));
        }
    }

    /**
     * One amqp-client channel in confirm mode publishes every message (persistent, {@code
     * mandatory}, the relay's properties) to a fresh fanout exchange with one durable classic
     * queue, keeping at most {@code window} unconfirmed; once per window, the queue purged in
     * between. The best window's rate is the result.
     */
    static Result rabbit(Connection conn, String exchange, List<Msg> msgs, List<Integer> windows) throws Exception {
        Destination.declareFanout(conn, exchange);
        double best = 0;
        StringBuilder detail = new StringBuilder("bare amqp-client confirm loop, msg/s by window:");
        try {
            for (int window : windows) {
                double rate = rabbitOnce(conn, exchange, msgs, window);
                detail.append(String.format(" %d: %,.0f", window, rate)).append(window == windows.get(windows.size() - 1) ? "" : ";");
                best = Math.max(best, rate);
                try (Channel admin = conn.createChannel()) {
                    admin.queuePurge(exchange);
                }
            }
        } finally {
            Destination.deleteFanout(conn, exchange);
        }
        return new Result(best, detail.toString());
    }

    private static double rabbitOnce(Connection conn, String exchange, List<Msg> msgs, int window) throws Exception {
        Semaphore free = new Semaphore(window);
        AtomicLong settled = new AtomicLong();
        AtomicLong nacked = new AtomicLong();
        Channel ch = conn.createChannel();
        try {
            ch.confirmSelect();
            long[] lastSettled = {0};
            ch.addConfirmListener(new ConfirmListener() {
                @Override
                public void handleAck(long tag, boolean multiple) {
                    settle(tag, multiple);
                }

                @Override
                public void handleNack(long tag, boolean multiple) {
                    nacked.addAndGet(settle(tag, multiple));
                }

                private long settle(long tag, boolean multiple) {
                    synchronized (lastSettled) {
                        long n = multiple ? tag - lastSettled[0] : 1;
                        lastSettled[0] = Math.max(lastSettled[0], tag);
                        free.release((int) n);
                        settled.addAndGet(n);
                        return n;
                    }
                }
            });
            ch.addReturnListener(r -> nacked.incrementAndGet());
            long t0 = System.nanoTime();
            Date now = new Date();
            for (Msg m : msgs) {
                free.acquire();
                publish(ch, exchange, m, now);
            }
            if (!free.tryAcquire(window, Duration.ofSeconds(60).toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("bare RabbitMQ loop: only " + settled.get() + " of " + msgs.size() + " confirmed");
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            if (nacked.get() != 0) {
                throw new IllegalStateException("bare RabbitMQ loop: " + nacked.get() + " nacked or returned");
            }
            return msgs.size() / secs;
        } finally {
            ch.close();
        }
    }
}
