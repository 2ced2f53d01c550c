package com.example.orders;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import io.txbox.relay.Relay;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TestRabbit;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Runs the README's quick start, {@link QuickStart}, against the real PostgreSQL and RabbitMQ: the
 * order's row is written and its message reaches a queue bound to the exchange, under the step key.
 */
class QuickStartIT {
    @RegisterExtension static final TestPostgres PG = TestPostgres.perClass();
    @RegisterExtension static final TestRabbit RABBIT = TestRabbit.perClass();

    @Test
    void quickStart_onFreshSchema_writesTheOrderAndPublishesItsStep() throws Exception {
        try (java.sql.Connection c = PG.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE orders (id text PRIMARY KEY)");
        }
        BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        try (Connection rabbit = RABBIT.newConnection(); Channel channel = rabbit.createChannel()) {
            channel.exchangeDeclare("shipping", "topic", true);
            String queue = channel.queueDeclare().getQueue();
            channel.queueBind(queue, "shipping", "order-1001");
            channel.basicConsume(queue, true, (tag, delivery) -> received.add(delivery), tag -> { });

            try (Relay relay = QuickStart.start(PG.dataSource(), PG.schema(), RABBIT.uri())) {
                Delivery delivery = received.poll(30, TimeUnit.SECONDS);
                assertThat(delivery).as("the shipping message, published by the relay").isNotNull();
                assertThat(new String(delivery.getBody(), UTF_8)).isEqualTo("{\"sku\":\"A7\"}");
                assertThat(delivery.getProperties().getHeaders().get("idempotency-key")).hasToString("order-1001:ship");
            }
        }
        try (java.sql.Connection c = PG.dataSource().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT id FROM orders")) {
            assertThat(rs.next()).as("the business row").isTrue();
            assertThat(rs.getString("id")).isEqualTo("order-1001");
            assertThat(rs.next()).isFalse();
        }
    }
}
