package com.example.orders;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.txbox.TxboxTables;
import io.txbox.relay.Relay;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Runs the quick start against a real PostgreSQL and RabbitMQ (see the system properties below). */
class QuickStartIT {
    static final String JDBC_URL = System.getProperty("orders.jdbcUrl", "jdbc:postgresql://127.0.0.1:5432/test");
    static final String AMQP_URI = System.getProperty("orders.amqpUri", "amqp://guest:guest@127.0.0.1:5672");

    @Test
    void placeOrder_deliveredTwice_writesOnceAndPublishesOnce() throws Exception {
        String run = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        String schema = "orders_" + run;
        String orderId = "order-" + run;
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setUrl(JDBC_URL);
        dataSource.setUser(System.getProperty("orders.jdbcUser", "postgres"));
        dataSource.setCurrentSchema(schema);
        try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("create schema " + schema);
            s.execute("create table " + schema + ".orders (id text primary key)");
        }
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(AMQP_URI);
        try (Connection rabbit = factory.newConnection(); Channel channel = rabbit.createChannel()) {
            String queue = channel.queueDeclare().getQueue();            // exclusive, deleted on close
            channel.exchangeDeclare("shipping", "topic", true);
            channel.queueBind(queue, "shipping", orderId);

            TxboxTables tables = TxboxTables.inSchema(schema);
            try (Relay first = QuickStart.placeOrder(dataSource, tables, AMQP_URI, orderId);
                 Relay second = QuickStart.placeOrder(dataSource, tables, AMQP_URI, orderId)) {
                await().atMost(Duration.ofSeconds(30)).until(() -> channel.messageCount(queue) == 1);
            }

            GetResponse shipped = channel.basicGet(queue, true);
            assertArrayEquals("{}".getBytes(), shipped.getBody());
            assertEquals(orderId + ":ship", String.valueOf(shipped.getProps().getHeaders().get("idempotency-key")));
            assertEquals(0, channel.messageCount(queue), "a second delivery of the order published again");
            try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement();
                 ResultSet rows = s.executeQuery("select count(*) from orders")) {
                rows.next();
                assertEquals(1, rows.getInt(1), "orders written");
            }
        } finally {
            try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("drop schema " + schema + " cascade");
            }
        }
    }
}
