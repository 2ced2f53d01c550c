package com.example.orders;

import com.rabbitmq.client.ConnectionFactory;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Relay;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import javax.sql.DataSource;

public final class QuickStart {
    public static Relay start(DataSource dataSource, String schema, String amqpUri) throws Exception {
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        TxboxMigrations.migrate(dataSource, tables);                       // creates the txbox tables; a no-op after
        Inbox inbox = Inbox.builder("orders").tables(tables).build();
        Outbox outbox = Outbox.builder().tables(tables).build();
        // One transaction: the inbox entry, your business write and the message for the next step.
        inbox.process(dataSource, InboundMessage.of("order-1001", new byte[0]), (tx, order) -> {
            try (var insert = tx.prepareStatement("INSERT INTO orders (id) VALUES (?)")) {
                insert.setString(1, order.key());
                insert.executeUpdate();
            }
            outbox.send(tx, OutboxMessage.builder(StepKey.of(order.key(), "ship"), "shipping")  // order-1001:ship
                    .routingKey(order.key()).payload("{\"sku\":\"A7\"}").build());
            return null;                                                   // nothing to replay to duplicates
        });

        ConnectionFactory rabbit = new ConnectionFactory();
        rabbit.setUri(amqpUri);
        try (var connection = rabbit.newConnection(); var channel = connection.createChannel()) {
            channel.exchangeDeclare("shipping", "topic", true);            // the relay never declares exchanges
        }
        Relay relay = Relay.builder().dataSource(dataSource).tables(tables)
                .route("shipping", RabbitPublisher.builder().uri(amqpUri).build().exchange("shipping")).build();
        relay.start();                                                     // publishes committed rows until close()
        return relay;
    }
}
