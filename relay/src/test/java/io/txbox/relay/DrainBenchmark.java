package io.txbox.relay;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.KafkaBroker;
import java.time.Duration;
import java.util.Arrays;

/**
 * Drain rate: fills the outbox with N rows of 400-byte payloads (1000 routing keys), starts a
 * relay and times until the outbox is empty, i.e. until every row was confirmed by the broker
 * and deleted.
 *
 * <pre>
 * java ... io.txbox.relay.DrainBenchmark kafka|rabbit [rows=100000] [workers=2] [batchSize=2000]
 * </pre>
 * {@code -Dbench.kafka.<property>=<value>} overrides a Kafka producer property.
 * PostgreSQL from TXBOX_TEST_JDBC_URL (default jdbc:postgresql://127.0.0.1:5432/test, user
 * postgres), Kafka from TXBOX_TEST_KAFKA or the testkit's shared broker, RabbitMQ on 127.0.0.1.
 */
public final class DrainBenchmark {
    public static void main(String[] args) throws Exception {
        String broker = args.length > 0 ? args[0] : "kafka";
        int rows = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : Relay.DEFAULT_WORKERS;
        int batch = args.length > 3 ? Integer.parseInt(args[3]) : Relay.DEFAULT_BATCH_SIZE;
        String schema = "txbox_bench_drain";
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(System.getenv().getOrDefault("TXBOX_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
        hc.setUsername(System.getenv().getOrDefault("TXBOX_TEST_JDBC_USER", "postgres"));
        hc.setMaximumPoolSize(workers + 2);
        try (HikariDataSource ds = new HikariDataSource(hc)) {
            Db db = new Db(ds, schema);
            db.execute("TRUNCATE " + db.tables.qualified(db.tables.outboxTable()) + ", "
                    + db.tables.qualified(db.tables.outboxDeadTable()) + ", " + db.tables.qualified(db.tables.relayLaneTable())
                    + ", " + db.tables.qualified(db.tables.relayMemberTable()));
            byte[] payload = new byte[400];
            Arrays.fill(payload, (byte) 'x');
            long tag = System.currentTimeMillis();
            db.sendMany(rows, i -> OutboxMessage.builder(StepKey.of("b" + tag + "-" + i, "s"), "bench")
                    .routingKey("key-" + (i % 1000)).payload(payload).contentType("application/octet-stream").build());
            db.execute("VACUUM ANALYZE " + db.tables.qualified(db.tables.outboxTable()));

            Route route;
            Runnable cleanup = () -> {};
            if (broker.equals("none")) {
                // the database side alone: a publisher that confirms at once
                route = Route.of(new Publisher() {
                    @Override
                    public String broker() {
                        return "none";
                    }

                    @Override
                    public java.util.concurrent.CompletionStage<Void> publish(String target, PublishRecord r) {
                        return java.util.concurrent.CompletableFuture.completedFuture(null);
                    }

                    @Override
                    public void close() {}
                }, "none");
            } else if (broker.equals("kafka")) {
                String bootstrap = System.getenv("TXBOX_TEST_KAFKA") != null ? System.getenv("TXBOX_TEST_KAFKA")
                        : KafkaBroker.shared().bootstrapServers();
                String topic = "bench-drain-" + tag;
                if (System.getenv("TXBOX_TEST_KAFKA") == null) {
                    KafkaBroker.shared().createTopic(topic, 8);
                }
                KafkaPublisher.Builder kb = KafkaPublisher.builder().bootstrapServers(bootstrap);
                // -Dbench.kafka.linger.ms=10 and the like override producer properties
                System.getProperties().stringPropertyNames().stream().filter(k -> k.startsWith("bench.kafka."))
                        .forEach(k -> kb.property(k.substring("bench.kafka.".length()), System.getProperty(k)));
                route = kb.build().topic(topic);
            } else {
                ConnectionFactory f = new ConnectionFactory();
                f.setHost("127.0.0.1");
                String exchange = "bench-drain-" + tag;
                com.rabbitmq.client.Connection admin = f.newConnection();
                Channel ch = admin.createChannel();
                ch.exchangeDeclare(exchange, "direct", false, true, null);
                ch.queueDeclare(exchange, true, false, false, null);
                ch.queueBind(exchange, exchange, "", null);
                for (int k = 0; k < 1000; k++) {
                    ch.queueBind(exchange, exchange, "key-" + k);
                }
                route = RabbitPublisher.builder().connectionFactory(f).build().exchange(exchange);
                cleanup = () -> {
                    try {
                        ch.queueDelete(exchange);
                        admin.close();
                    } catch (Exception e) {
                        System.err.println("cleanup: " + e);
                    }
                };
            }
            try (Relay relay = Relay.builder().dataSource(ds).tables(db.tables).route("bench", route)
                    .workers(workers).batchSize(batch).pollInterval(Duration.ofMillis(50)).build()) {
                long start = System.nanoTime();
                relay.start();
                while (relay.status().published() < rows) {
                    Thread.sleep(5);
                    if (System.nanoTime() - start > 300_000_000_000L) {
                        throw new IllegalStateException("not drained after 300 s: " + relay.status());
                    }
                }
                double secs = (System.nanoTime() - start) / 1e9;
                System.out.printf("DRAIN %s: %d rows, 400-byte payloads, %d workers, batch %d: %.2f s, %.0f msg/s (remaining rows %d, dead %d)%n",
                        broker, rows, workers, batch, secs, rows / secs, db.outboxRows(), db.deadRows());
            } finally {
                cleanup.run();
            }
        }
        System.exit(0);
    }
}
