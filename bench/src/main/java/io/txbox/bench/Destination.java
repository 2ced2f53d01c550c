package io.txbox.bench;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.AMQP;
import io.txbox.relay.Route;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.io.IOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * Where a relay scenario's messages go and how they are read back: a fresh Kafka topic, or a
 * fresh RabbitMQ exchange with one durable queue bound to it. Removed again at the end.
 */
abstract class Destination implements AutoCloseable {
    /** The outbox destination name (the txbox side), also the topic or exchange name. */
    final String name;

    Destination(String name) {
        this.name = name;
    }

    static Destination create(Broker broker, BenchEnv env, String hint, Map<String, String> producerOverrides) throws Exception {
        return create(broker, env, hint, producerOverrides, false);
    }

    /** With {@code strictFencing}, a Kafka destination's publisher runs per-lane transactions. */
    static Destination create(Broker broker, BenchEnv env, String hint, Map<String, String> producerOverrides,
            boolean strictFencing) throws Exception {
        String name = "bench-" + hint + "-" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 30, 1L << 31), 36);
        return broker == Broker.KAFKA ? new KafkaDestination(env, name, producerOverrides, strictFencing) : new RabbitDestination(env, name);
    }

    /** A route to Kafka topic {@code topic}, with its own publisher; also what a relay in a child JVM uses. */
    static Route kafkaRoute(String bootstrap, String topic, Map<String, String> overrides, boolean strictFencing) {
        KafkaPublisher.Builder b = KafkaPublisher.builder().bootstrapServers(bootstrap);
        overrides.forEach(b::property);
        if (strictFencing) {
            b.strictFencing("txbox-bench-" + topic);
        }
        return b.build().topic(topic);
    }

    /** A route for the relay, with its own publisher (closed by the relay). */
    abstract Route route();

    /**
     * Reads back everything published so far until {@code expected} distinct step keys were
     * seen or nothing new came for {@code idle}.
     */
    abstract KafkaAdmin.ReadBack readBack(long expected, Duration idle) throws Exception;

    abstract String describe();

    /**
     * Publishes {@code msgs} with the bare client to a fresh twin of this destination on the
     * same broker (see {@link Bare}); {@code windows} are the confirm windows a RabbitMQ loop tries.
     */
    abstract Bare.Result bare(List<Bare.Msg> msgs, List<Integer> windows) throws Exception;

    /**
     * Drains the outbox rows of {@code outboxDestination} with {@link ByHand}'s loop to a fresh
     * twin of this destination on the same broker; rows per second.
     */
    abstract double byHand(DataSource ds, String outboxDestination, int batchSize, int workers) throws Exception;

    /** A durable fanout exchange with one durable classic queue of the same name bound to it. */
    static void declareFanout(Connection conn, String name) throws IOException, java.util.concurrent.TimeoutException {
        try (Channel ch = conn.createChannel()) {
            ch.exchangeDeclare(name, BuiltinExchangeType.FANOUT, true);
            ch.queueDeclare(name, true, false, false, Map.of("x-queue-type", "classic"));
            ch.queueBind(name, name, "");
        }
    }

    static void deleteFanout(Connection conn, String name) throws IOException, java.util.concurrent.TimeoutException {
        try (Channel ch = conn.createChannel()) {
            ch.queueDelete(name);
            ch.exchangeDelete(name);
        }
    }

    @Override
    public void close() throws Exception {}

    static final class KafkaDestination extends Destination {
        private final BenchEnv env;
        private final Map<String, String> overrides;
        private final boolean strictFencing;

        KafkaDestination(BenchEnv env, String name, Map<String, String> overrides, boolean strictFencing) {
            super(name);
            this.env = env;
            this.overrides = overrides;
            this.strictFencing = strictFencing;
            env.createTopic(name, 4);
            // the bare client's twin, made now so that its partitions have leaders long before it is used
            env.createTopic(name + "-bare", 4);
            env.createTopic(name + "-hand", 4);
        }

        @Override
        double byHand(DataSource ds, String outboxDestination, int batchSize, int workers) throws Exception {
            try (KafkaProducer<byte[], byte[]> p = Bare.producer(env.kafkaBootstrap(), overrides)) {
                return ByHand.drain(env, ds, outboxDestination, batchSize, workers, () -> ByHand.kafka(p, name + "-hand"));
            }
        }

        @Override
        Route route() {
            return kafkaRoute(env.kafkaBootstrap(), name, overrides, strictFencing);
        }

        @Override
        Bare.Result bare(List<Bare.Msg> msgs, List<Integer> windows) throws Exception {
            return Bare.kafka(env.kafkaBootstrap(), name + "-bare", msgs, overrides);
        }

        @Override
        KafkaAdmin.ReadBack readBack(long expected, Duration idle) {
            return KafkaAdmin.readBack(env.kafkaBootstrap(), name, null, expected, idle);
        }

        @Override
        String describe() {
            return "Kafka topic " + name + " (4 partitions) at " + env.kafkaBootstrap()
                    + (strictFencing ? ", strict fencing (per-lane transactions)" : "");
        }
    }

    static final class RabbitDestination extends Destination {
        private final BenchEnv env;
        private final Connection admin;

        RabbitDestination(BenchEnv env, String name) throws Exception {
            super(name);
            this.env = env;
            this.admin = env.rabbit().newConnection("txbox-bench-admin");
            declareFanout(admin, name);
        }

        @Override
        double byHand(DataSource ds, String outboxDestination, int batchSize, int workers) throws Exception {
            String twin = name + "-hand";
            declareFanout(admin, twin);
            try (Connection conn = env.rabbit().newConnection("txbox-bench-by-hand")) {
                return ByHand.drain(env, ds, outboxDestination, batchSize, workers, () -> {
                    try {
                        return ByHand.rabbit(conn, twin);
                    } catch (Exception e) {
                        throw new IllegalStateException("cannot open a by-hand channel", e);
                    }
                });
            } finally {
                deleteFanout(admin, twin);
            }
        }

        @Override
        Route route() {
            return RabbitPublisher.builder().connectionFactory(env.rabbit()).connectionName("txbox-bench-relay").build()
                    .exchange(name);
        }

        @Override
        Bare.Result bare(List<Bare.Msg> msgs, List<Integer> windows) throws Exception {
            return Bare.rabbit(admin, name + "-bare", msgs, windows);
        }

        @Override
        KafkaAdmin.ReadBack readBack(long expected, Duration idle) throws Exception {
            Set<String> seen = new HashSet<>((int) Math.min(Integer.MAX_VALUE, expected * 2));
            AtomicLong total = new AtomicLong();
            AtomicLong lastNew = new AtomicLong(System.nanoTime());
            Channel ch = admin.createChannel();
            try {
                ch.basicQos(2000);
                String tag = ch.basicConsume(name, false, new DefaultConsumer(ch) {
                    @Override
                    public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                            throws IOException {
                        total.incrementAndGet();
                        Object key = props.getHeaders() == null ? null : props.getHeaders().get(RabbitPublisher.IDEMPOTENCY_HEADER);
                        synchronized (seen) {
                            if (key != null && seen.add(key.toString())) {
                                lastNew.set(System.nanoTime());
                                seen.notifyAll();
                            }
                        }
                        if (envelope.getDeliveryTag() % 500 == 0) {
                            getChannel().basicAck(envelope.getDeliveryTag(), true);
                        }
                    }
                });
                // woken by every new key; ends when all arrived or none came for `idle`
                synchronized (seen) {
                    while (seen.size() < expected) {
                        long quietFor = idle.toNanos() - (System.nanoTime() - lastNew.get());
                        if (quietFor <= 0) {
                            break;
                        }
                        TimeUnit.NANOSECONDS.timedWait(seen, quietFor);
                    }
                }
                ch.basicCancel(tag);
            } finally {
                try {
                    ch.close();
                } catch (Exception ignored) {
                    // unacked tail goes back to the queue, which is deleted anyway
                }
            }
            long distinct;
            synchronized (seen) {
                distinct = seen.size();
            }
            return new KafkaAdmin.ReadBack(total.get(), distinct, Math.max(0, expected - distinct));
        }

        @Override
        String describe() {
            return "RabbitMQ fanout exchange " + name + " -> durable classic queue " + name;
        }

        @Override
        public void close() throws Exception {
            try {
                deleteFanout(admin, name);
            } finally {
                admin.close();
            }
        }
    }
}
