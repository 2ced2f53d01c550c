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
    /** Places order {@code orderId} once, however often it arrives, and publishes it to exchange "shipping". */
    public static Relay placeOrder(DataSource db, TxboxTables tables, String amqpUri, String orderId) throws Exception {
        TxboxMigrations.migrate(db, tables);                             // creates or upgrades txbox's tables
        Inbox inbox = Inbox.builder("orders").tables(tables).build();
        Outbox outbox = Outbox.builder().tables(tables).build();
        // One transaction: the inbox entry, the business write and the outgoing message commit together.
        inbox.process(db, InboundMessage.of(orderId, "{}".getBytes()), (tx, message) -> {
            try (PreparedStatement insert = tx.prepareStatement("insert into orders (id) values (?)")) {
                insert.setString(1, orderId);
                insert.executeUpdate();
            }
            outbox.send(tx, OutboxMessage.builder(StepKey.of(orderId, "ship"), "shipping")  // key orderId:ship
                    .routingKey(orderId).payload(message.payload()).build());
            return null;
        });
        ConnectionFactory rabbit = new ConnectionFactory();              // the relay publishes to an exchange
        rabbit.setUri(amqpUri);                                          // that you declare
        try (var connection = rabbit.newConnection(); Channel channel = connection.createChannel()) {
            channel.exchangeDeclare("shipping", BuiltinExchangeType.TOPIC, true);
        }
        Relay relay = Relay.builder().dataSource(db).tables(tables).wakeOn(outbox)
                .route("shipping", RabbitPublisher.builder().uri(amqpUri).build().exchange("shipping")).build();
        relay.start();                                                   // publishes until relay.close()
        return relay;
    }
}
