package io.txbox.faults;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import io.txbox.relay.Route;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * The order checker's relay, in its own JVM or in the test's:
 * {@code OrderRelayChild kafka|rabbitmq <address> <topic|exchange> <relayId> <jdbcUrl> <user> <schema> <batchSize>}.
 * Started without arguments it is a spare: it loads its classes, prints {@value #WAITING} and
 * reads the arguments as one line from stdin, so a history gets a child relay in a second
 * rather than after a JVM's start.
 * A child closes its relay gracefully on SIGTERM (a graceful restart) and prints {@value #READY}
 * once started; SIGSTOP, SIGKILL and session kills come from the test.
 */
public final class OrderRelayChild {
    static final String DESTINATION = "ordered";
    static final String READY = "ORDER-RELAY-READY";
    /** Printed by a spare child, started without arguments, once it waits for them on stdin. */
    static final String WAITING = "ORDER-RELAY-WAITING";
    /** Short, so the lanes of a stopped or killed relay are taken over within a history. */
    static final Duration LANE_LEASE = Duration.ofSeconds(2);

    private OrderRelayChild() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            // a spare: load the relay's classes now, take the arguments when a history needs a relay
            Class.forName(Relay.class.getName());
            Class.forName(HikariDataSource.class.getName());
            KafkaPublisher.builder();
            RabbitPublisher.builder();
            System.out.println(WAITING);
            System.out.flush();
            String line = new java.io.BufferedReader(new java.io.InputStreamReader(System.in,
                    java.nio.charset.StandardCharsets.UTF_8)).readLine();
            if (line == null) {
                return; // the test ended without using this spare
            }
            args = line.split(" ");
        }
        HikariDataSource ds = Pools.pool(args[4], args[5], applicationName(args[3]), 3);
        Relay relay = build(ds, args[0], args[1], args[2], args[3], args[6], Integer.parseInt(args[7]),
                RelayListener.NONE);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            relay.close();
            ds.close();
            System.out.println("ORDER-RELAY-CLOSED");
            closed.countDown();
        }, "order-relay-shutdown"));
        relay.start();
        System.out.println(READY);
        System.out.flush();
        closed.await(); // runs until SIGTERM or SIGKILL
    }

    /** The name the relay's sessions carry on PostgreSQL, so a fault can find and terminate them. */
    static String applicationName(String relayId) {
        return "order-relay-" + relayId;
    }

    /** The same relay for a child and for an in-process relay; only the listener differs. */
    static Relay build(javax.sql.DataSource ds, String broker, String address, String target, String relayId,
            String schema, int batchSize, RelayListener listener) {
        Route route = switch (broker) {
            case "kafka" -> KafkaPublisher.builder().bootstrapServers(address)
                    .property("delivery.timeout.ms", "1800").property("request.timeout.ms", "1000")
                    .property("max.block.ms", "1500").build().topic(target);
            case "rabbitmq" -> RabbitPublisher.builder().uri(address).connectionName(applicationName(relayId)).build()
                    .exchange(target);
            default -> throw new IllegalArgumentException("broker must be kafka or rabbitmq: " + broker);
        };
        // a poison row (marked by the history) is refused for good: its key parks until the history releases it
        route = Route.of(new PoisonRows(route.publisher()), route.target());
        return Relay.builder().dataSource(ds).tables(TxboxTables.inSchema(schema)).route(DESTINATION, route)
                .relayId(relayId).workers(2).batchSize(batchSize).pollInterval(Duration.ofMillis(20))
                .publishTimeout(Duration.ofMillis(1500)).laneLease(LANE_LEASE)
                .backoff(Duration.ofMillis(50), Duration.ofMillis(500)).maxAttempts(1000)
                .shutdownTimeout(Duration.ofSeconds(5)).listener(listener).build();
    }

    /** The header that marks a poison row: every publish of it fails for good. */
    static final String POISON_HEADER = "x-order-poison";

    /** Refuses every row marked {@link #POISON_HEADER} at once, passes the others on. */
    static final class PoisonRows implements io.txbox.relay.Publisher {
        private final io.txbox.relay.Publisher inner;

        PoisonRows(io.txbox.relay.Publisher inner) {
            this.inner = inner;
        }

        @Override
        public String broker() {
            return inner.broker();
        }

        @Override
        public java.util.concurrent.CompletionStage<Void> publish(String target, io.txbox.relay.PublishRecord record) {
            if (record.headers().containsKey(POISON_HEADER)) {
                return java.util.concurrent.CompletableFuture.failedFuture(
                        io.txbox.relay.PublishException.permanent("poison row of the order checker", null));
            }
            return inner.publish(target, record);
        }

        @Override
        public void endOfBatch() {
            inner.endOfBatch();
        }

        @Override
        public void check(Duration timeout) {
            inner.check(timeout);
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
