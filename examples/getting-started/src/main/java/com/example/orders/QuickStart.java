package com.example.orders;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
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
import java.sql.PreparedStatement;
import javax.sql.DataSource;

public final class QuickStart {
    /** Places order {@code orderId} once however often it arrives, and publishes it to exchange "shipping". */
    public static Relay placeOrder(DataSource dataSource, TxboxTables tables, String amqpUri, String orderId)
            throws Exception {
        TxboxMigrations.migrate(dataSource, tables);                    // creates or upgrades txbox's tables
        Inbox inbox = Inbox.builder("orders").tables(tables).build();
        Outbox outbox = Outbox.builder().tables(tables).build();

        // One transaction: the inbox entry, the business write and the outgoing message commit together.
        inbox.process(dataSource, InboundMessage.of(orderId, "{}".getBytes()), (tx, message) -> {
            try (PreparedStatement insert = tx.prepareStatement("insert into orders (id) values (?)")) {
                insert.setString(1, orderId);
                insert.executeUpdate();
            }
            outbox.send(tx, OutboxMessage.builder(StepKey.of(orderId, "ship"), "shipping")  // key orderId:ship
                    .routingKey(orderId).payload(message.payload()).build());
            return null;
        });

        ConnectionFactory rabbit = new ConnectionFactory();              // the relay publishes to an
        rabbit.setUri(amqpUri);                                          // exchange you declare
        try (com.rabbitmq.client.Connection c = rabbit.newConnection(); Channel channel = c.createChannel()) {
            channel.exchangeDeclare("shipping", BuiltinExchangeType.TOPIC, true);
        }
        Relay relay = Relay.builder().dataSource(dataSource).tables(tables)
                .route("shipping", RabbitPublisher.builder().uri(amqpUri).build().exchange("shipping"))
                .wakeOn(outbox).build();
        relay.start();                                                   // publishes until relay.close()
        return relay;
    }
}
