package io.txbox.spring;

import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Outcome;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;

/** The starter README's example: one handler writing through JPA, JdbcTemplate and the outbox, exactly once. */
@Service
public class ShipmentService {
    private final TxboxTemplate txbox;
    private final ShipmentRepository shipments;   // a Spring Data JPA repository
    private final JdbcTemplate jdbc;

    public ShipmentService(TxboxTemplate txbox, ShipmentRepository shipments, JdbcTemplate jdbc) {
        this.txbox = txbox;
        this.shipments = shipments;
        this.jdbc = jdbc;
    }

    /** Handles an "order paid" message once, however often it is delivered. */
    public Outcome onOrderPaid(InboundMessage message) {
        return txbox.process(message, (tx, m) -> {
            String orderId = m.key();
            shipments.save(new Shipment(orderId));                                      // JPA
            jdbc.update("INSERT INTO audit_log (order_id, event) VALUES (?, 'shipped')", orderId); // JDBC
            txbox.send(OutboxMessage.builder(StepKey.of(orderId, "ship"), "shipments")  // outbox
                    .payload(m.payload()).build());
            return null;
        });
    }
}
