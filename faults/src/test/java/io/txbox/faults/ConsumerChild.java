package io.txbox.faults;

import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * An inbox consumer in its own JVM, for tests that SIGKILL it between the database commit and the
 * ack / offset commit:
 * {@code ConsumerChild kafka|rabbit <jdbcUrl> <user> <schema> <bootstrap|amqpUri> <topic|queue> <consumer>
 * [deadLetterExchange (rabbit)] <batchSize>}.
 *
 * <p>The handler writes one effect per message. The consumer's listener hears of each outcome
 * after the database commit and before the runner acks or commits the offset; for a processed
 * message it prints {@value #COMMITTED} and parks the consumer's thread there for good, so the
 * ack / offset commit never happens and the test can kill the process at exactly that point. In
 * batch mode the whole batch is committed by then, and none of it acked.
 */
public final class ConsumerChild {
    static final String READY = "CONSUMER-CHILD-READY";
    static final String COMMITTED = "CONSUMER-CHILD-COMMITTED";
    /** The group notices a killed member after this long without heartbeats (the broker's minimum). */
    static final Duration SESSION_TIMEOUT = Duration.ofSeconds(6);
    static final Duration HEARTBEAT_INTERVAL = Duration.ofSeconds(1);

    private ConsumerChild() {}

    public static void main(String[] args) throws Exception {
        String broker = args[0];
        String name = args[6];
        int batchSize = Integer.parseInt(args[args.length - 1]);
        HikariDataSource ds = Pools.pool(args[1], args[2], "consumer-child-" + name, 4);
        new Effects(ds);
        Inbox inbox = Inbox.builder(name).tables(TxboxTables.inSchema(args[3])).maxAttempts(3).build();
        ConsumerListener parkAfterCommit = new ConsumerListener() {
            @Override
            public void onOutcome(String consumer, Outcome.Status status, Duration took) {
                if (status == Outcome.Status.PROCESSED) {
                    System.out.println(COMMITTED);
                    System.out.flush();
                    parkForever();
                }
            }
        };
        InboxConsumer consumer = switch (broker) {
            case "kafka" -> KafkaInboxConsumer.builder(inbox, ds, Effects.recorder(name))
                    .bootstrapServers(args[4]).topics(args[5]).pollTimeout(Duration.ofMillis(100))
                    .consumerProperty("session.timeout.ms", (int) SESSION_TIMEOUT.toMillis())
                    .consumerProperty("heartbeat.interval.ms", (int) HEARTBEAT_INTERVAL.toMillis())
                    .batchSize(batchSize).listener(parkAfterCommit).build();
            case "rabbit" -> {
                ConnectionFactory factory = new ConnectionFactory();
                factory.setUri(args[4]);
                yield RabbitInboxConsumer.builder(inbox, ds, Effects.recorder(name)).connectionFactory(factory)
                        .queue(args[5]).deadLetterExchange(args[7]).declareDeadLetterTopology(false).prefetch(Math.max(RabbitInboxConsumer.DEFAULT_PREFETCH, batchSize))
                        .batchSize(batchSize).listener(parkAfterCommit).build();
            }
            default -> throw new IllegalArgumentException("broker must be kafka or rabbit: " + broker);
        };
        consumer.start();
        System.out.println(READY);
        System.out.flush();
        parkForever(); // runs until the test kills the process
    }

    private static void parkForever() {
        try {
            new CountDownLatch(1).await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
