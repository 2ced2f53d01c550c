package io.txbox.saga;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The saga's brokers and its topology: which destination is a Kafka topic and which a RabbitMQ
 * exchange, and how each service's relay and consumers reach them. The only class that knows
 * the publisher and consumer adapters' builders.
 *
 * <pre>
 * order    --payments (Kafka)-->        payment
 * payment  --shipping (RabbitMQ)-->     shipping
 * payment  --order-updates (Kafka)-->   order     (cancel-order, after a decline)
 * shipping --order-updates (Kafka)-->   order     (complete-order)
 * </pre>
 */
public final class Brokers implements AutoCloseable {
    /** Logical destination of process-payment steps: a Kafka topic. */
    public static final String PAYMENTS = "payments";
    /** Logical destination of arrange-shipping steps: a RabbitMQ exchange. */
    public static final String SHIPPING = "shipping";
    /** Logical destination of complete-order and cancel-order steps: a Kafka topic. */
    public static final String ORDER_UPDATES = "order-updates";

    private static final Logger log = LoggerFactory.getLogger(Brokers.class);
    private static final int PARTITIONS = 4;

    private final SagaSettings settings;
    private final String kafkaBootstrap;
    private final ConnectionFactory rabbit;
    private final String runId;
    private final AtomicLong chaosCopies = new AtomicLong();
    private final AtomicLong rewoundRecords = new AtomicLong();

    Brokers(SagaSettings settings, String kafkaBootstrap, ConnectionFactory rabbit, String runId) {
        this.settings = settings;
        this.kafkaBootstrap = kafkaBootstrap;
        this.rabbit = rabbit;
        this.runId = runId;
    }

    public SagaSettings settings() {
        return settings;
    }

    /** The broker-side name of a logical destination in this run. */
    public String brokerName(String destination) {
        return settings.brokerName(runId + "." + destination);
    }

    /** Creates the Kafka topics and the RabbitMQ exchange and queue of this run. */
    void declare() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(
                    new NewTopic(brokerName(PAYMENTS), PARTITIONS, (short) 1),
                    new NewTopic(brokerName(ORDER_UPDATES), PARTITIONS, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new SagaException("cannot create the Kafka topics at " + kafkaBootstrap + ": " + e, e);
        }
        try (Connection c = rabbit.newConnection("saga-setup"); Channel ch = c.createChannel()) {
            String exchange = brokerName(SHIPPING);
            ch.exchangeDeclare(exchange, "topic", true);
            // Queues of abandoned runs go away by themselves after 10 idle minutes.
            ch.queueDeclare(exchange, true, false, false, Map.of("x-expires", 600_000));
            ch.queueBind(exchange, exchange, "#");
        } catch (Exception e) {
            throw new SagaException("cannot declare the RabbitMQ exchange and queue: " + e, e);
        }
    }

    /** Removes this run's RabbitMQ exchange and queue; the Kafka topics go with a private broker. */
    void undeclare() {
        try (Connection c = rabbit.newConnection("saga-teardown"); Channel ch = c.createChannel()) {
            ch.queueDelete(brokerName(SHIPPING));
            // the consumer's dead-letter queue goes only if nothing was dead-lettered
            ch.queueDelete(brokerName(SHIPPING) + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX, false, true);
            ch.exchangeDelete(brokerName(SHIPPING));
        } catch (Exception e) {
            // best effort; the queue expires anyway
        }
    }

    /** A route from a publisher to the broker-side name of {@code destination}. */
    public Route route(Publisher publisher, String destination) {
        return Route.of(publisher, brokerName(destination));
    }

    /** A new Kafka publisher for one relay, wrapped for chaos. */
    public Publisher kafkaPublisher(String clientId) {
        Publisher p = KafkaPublisher.builder().bootstrapServers(kafkaBootstrap).property("client.id", clientId).build();
        return ChaosPublisher.wrap(p, settings.chaos().duplicatePublish(), chaosCopies);
    }

    /** A new RabbitMQ publisher for one relay, wrapped for chaos. */
    public Publisher rabbitPublisher(String clientId) {
        Publisher p = RabbitPublisher.builder().connectionFactory(rabbit).connectionName(clientId).build();
        return ChaosPublisher.wrap(p, settings.chaos().duplicatePublish(), chaosCopies);
    }

    /**
     * Consumes a Kafka topic through {@code inbox}, running {@code handler} once per key, with
     * {@code instances} consumers in one group (each one thread, sharing the partitions).
     */
    public List<AutoCloseable> kafkaConsumers(String destination, String group, int instances, Inbox inbox,
            DataSource ds, Handler handler) {
        List<AutoCloseable> consumers = new java.util.ArrayList<>();
        for (int i = 1; i <= instances; i++) {
            consumers.add(ConsumerAdapters.kafka(kafkaBootstrap, brokerName(destination), group, group + "-" + i,
                    inbox, ds, handler));
        }
        return consumers;
    }

    /** Consumes this run's RabbitMQ queue of {@code destination} through {@code inbox}. */
    public AutoCloseable rabbitConsumer(String destination, Inbox inbox, DataSource ds, Handler handler) {
        return ConsumerAdapters.rabbit(rabbit, brokerName(destination), inbox, ds, handler);
    }

    /**
     * Moves the committed offsets of {@code group} on {@code destination}'s topic back by
     * {@code records} per partition, as a consumer that crashed after its database commit but
     * before its offset commit would leave them: those records are delivered again. The group
     * must have no live members; if it still has, nothing is moved.
     *
     * @return the number of records that will be delivered again
     */
    public long rewind(String group, String destination, int records) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBootstrap);
        String topic = brokerName(destination);
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> rewound = new HashMap<>();
            long total = 0;
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
                if (e.getValue() == null || !e.getKey().topic().equals(topic)) {
                    continue;
                }
                long offset = e.getValue().offset();
                long back = Math.max(0, offset - records);
                total += offset - back;
                rewound.put(e.getKey(), new OffsetAndMetadata(back));
            }
            if (!rewound.isEmpty()) {
                admin.alterConsumerGroupOffsets(group, rewound).all().get(10, TimeUnit.SECONDS);
            }
            rewoundRecords.addAndGet(total);
            return total;
        } catch (Exception e) {
            log.info("chaos: could not rewind group {} on {}: {}", group, topic, e.toString());
            return 0;
        }
    }

    /** How many records the chaos rewinds put back in front of the consumers. */
    public long rewoundRecords() {
        return rewoundRecords.get();
    }

    /** How many extra copies the chaos publishers sent so far. */
    public long chaosCopies() {
        return chaosCopies.get();
    }

    @Override
    public void close() {
        undeclare();
    }
}
