package io.txbox.faults;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.relay.Relay;
import io.txbox.relay.Route;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.time.Duration;

/**
 * A standalone relay in its own JVM, for tests that SIGKILL it:
 * {@code RelayChild kafka|rabbit <jdbcUrl> <user> <schema> <bootstrap|amqpUri> <topic|exchange> <relayId>}.
 * Publishes destination {@value #DESTINATION} and prints {@value #READY} once started.
 */
public final class RelayChild {
    static final String DESTINATION = "steps";
    static final String READY = "RELAY-CHILD-READY";
    /** Short, so a restarted relay takes over a killed one's lanes quickly. */
    static final Duration LANE_LEASE = Duration.ofSeconds(3);

    private RelayChild() {}

    public static void main(String[] args) throws Exception {
        String broker = args[0];
        HikariDataSource ds = Pools.pool(args[1], args[2], "relay-child-" + args[6], 4);
        Route route = switch (broker) {
            case "kafka" -> KafkaPublisher.builder().bootstrapServers(args[4])
                    .property("delivery.timeout.ms", "1800").property("request.timeout.ms", "1000")
                    .property("max.block.ms", "1500").build().topic(args[5]);
            case "rabbit" -> RabbitPublisher.builder().uri(args[4]).connectionName("relay-child-" + args[6]).build()
                    .exchange(args[5]);
            default -> throw new IllegalArgumentException("broker must be kafka or rabbit: " + broker);
        };
        Relay relay = Relay.builder().dataSource(ds).tables(TxboxTables.inSchema(args[3])).route(DESTINATION, route)
                .relayId(args[6]).workers(2).batchSize(200).pollInterval(Duration.ofMillis(20))
                .publishTimeout(Duration.ofSeconds(2)).laneLease(LANE_LEASE)
                .backoff(Duration.ofMillis(50), Duration.ofMillis(500)).maxAttempts(1000).build();
        relay.start();
        System.out.println(READY);
        System.out.flush();
        new java.util.concurrent.CountDownLatch(1).await(); // runs until the test kills the process
    }
}
