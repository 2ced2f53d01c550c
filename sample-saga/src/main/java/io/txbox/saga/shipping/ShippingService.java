package io.txbox.saga.shipping;

import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Publisher;
import io.txbox.relay.Relay;
import io.txbox.saga.Brokers;
import io.txbox.saga.Json;
import io.txbox.saga.SagaService;
import io.txbox.saga.ServiceDb;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Shipping service: receives {@code K:arrange-shipping} from RabbitMQ, books a shipment and
 * emits {@code K:complete-order}. Its shipments table has no unique key on the order, so a step
 * handled twice would show as two shipments.
 */
public final class ShippingService extends SagaService {
    public static final String CONSUMER = "shipping";
    public static final String COMPLETE_ORDER = "complete-order";

    private final Inbox deliveries;

    public ShippingService(ServiceDb db, Brokers brokers) {
        super("shipping", db, brokers);
        this.deliveries = inbox(CONSUMER).build();
    }

    public static String[] ddl(String schema) {
        return new String[] {
            "CREATE TABLE " + schema + ".shipments (id bigserial PRIMARY KEY, order_id text NOT NULL,"
                    + " step_key text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
            "CREATE INDEX shipments_order_ix ON " + schema + ".shipments (order_id)",
        };
    }

    byte[] onArrangeShipping(Connection tx, InboundMessage message) throws SQLException {
        StepKey step = StepKey.parse(message.key());
        String orderId = Json.read(message.payload()).path("orderId").asText();
        long shipmentId;
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + db.table("shipments")
                + " (order_id, step_key) VALUES (?, ?)", new String[] {"id"})) {
            ps.setString(1, orderId);
            ps.setString(2, step.value());
            ps.executeUpdate();
            try (var rs = ps.getGeneratedKeys()) {
                rs.next();
                shipmentId = rs.getLong(1);
            }
        }
        Map<String, Object> next = new LinkedHashMap<>();
        next.put("orderId", orderId);
        next.put("shipmentId", shipmentId);
        outbox.send(tx, OutboxMessage.builder(step.next(COMPLETE_ORDER), Brokers.ORDER_UPDATES)
                .routingKey(orderId).contentType("application/json").payload(Json.write(next)).build());
        return Json.write(next);
    }

    @Override
    protected void routes(Relay.Builder relay) {
        Publisher kafka = brokers.kafkaPublisher("shipping-relay");
        relay.route(Brokers.ORDER_UPDATES, brokers.route(kafka, Brokers.ORDER_UPDATES));
    }

    @Override
    protected List<AutoCloseable> startConsumers() {
        return List.of(brokers.rabbitConsumer(Brokers.SHIPPING, deliveries, db.dataSource(),
                this::onArrangeShipping));
    }
}
