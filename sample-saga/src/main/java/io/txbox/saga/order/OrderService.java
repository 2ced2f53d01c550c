package io.txbox.saga.order;

import com.fasterxml.jackson.databind.JsonNode;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.http.HttpIdempotency;
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
import java.util.UUID;

/**
 * The Order service: takes {@code POST /orders} with an Idempotency-Key, stores the order and
 * starts the saga with step {@code K:process-payment}; ends it when {@code K:complete-order} or
 * {@code K:cancel-order} comes back.
 *
 * <p>Its business writes are deliberately naive: they rely on the inbox alone to run once. The
 * order id is random, so a request handled twice would make two orders for one key; a completion
 * handled twice would append a second COMPLETED event. The report looks for exactly that.
 */
public final class OrderService extends SagaService {
    public static final String HTTP_CONSUMER = "order-http";
    public static final String UPDATES_CONSUMER = "order-updates";
    public static final String PROCESS_PAYMENT = "process-payment";
    public static final String COMPLETE_ORDER = "complete-order";
    public static final String CANCEL_ORDER = "cancel-order";

    private final Inbox updatesInbox;
    private final OrderHttp http;

    public OrderService(ServiceDb db, Brokers brokers) {
        super("order", db, brokers);
        this.updatesInbox = inbox(UPDATES_CONSUMER).build();
        Inbox httpKeys = inbox(HTTP_CONSUMER).fingerprint(HttpIdempotency.fingerprint())
                .maxAttempts(HttpIdempotency.NO_ATTEMPT_LIMIT).build();
        this.http = new OrderHttp(HttpIdempotency.builder(httpKeys, db.dataSource()).build(), this::placeOrder);
    }

    /** The order service's own tables. */
    public static String[] ddl(String schema) {
        return new String[] {
            // no unique key on idempotency_key: a second order for one key must stay visible
            "CREATE TABLE " + schema + ".orders (order_id text PRIMARY KEY, idempotency_key text NOT NULL,"
                    + " customer text NOT NULL, amount_cents bigint NOT NULL, status text NOT NULL,"
                    + " created_at timestamptz NOT NULL DEFAULT clock_timestamp(), updated_at timestamptz)",
            "CREATE INDEX orders_key_ix ON " + schema + ".orders (idempotency_key)",
            // append-only: every state change of every order, never deduplicated here
            "CREATE TABLE " + schema + ".order_events (id bigserial PRIMARY KEY, order_id text NOT NULL,"
                    + " event text NOT NULL, step_key text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
            "CREATE INDEX order_events_order_ix ON " + schema + ".order_events (order_id)",
        };
    }

    /** Starts the HTTP endpoint on {@code port} (0 for any free port) and returns its base URI. */
    public String startHttp(int port) {
        return http.start(port);
    }

    /**
     * The business part of {@code POST /orders}, in the transaction that also completes the
     * Idempotency-Key's claim with the response: stores the order, its ACCEPTED event and the
     * first saga step. Validates before it writes, so a refusal (400) commits nothing.
     *
     * @return the JSON body of the 201 response
     */
    byte[] placeOrder(Connection tx, String idempotencyKey, byte[] body) throws SQLException {
        JsonNode request = Json.read(body);
        String customer = request.path("customer").asText("anonymous");
        long amount = request.path("amountCents").asLong();
        if (amount <= 0) {
            throw new IllegalArgumentException("amountCents must be positive");
        }
        String orderId = "ord_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + db.table("orders")
                + " (order_id, idempotency_key, customer, amount_cents, status) VALUES (?, ?, ?, ?, 'PENDING')")) {
            ps.setString(1, orderId);
            ps.setString(2, idempotencyKey);
            ps.setString(3, customer);
            ps.setLong(4, amount);
            ps.executeUpdate();
        }
        event(tx, orderId, "ACCEPTED", idempotencyKey);
        Map<String, Object> payment = new LinkedHashMap<>();
        payment.put("orderId", orderId);
        payment.put("amountCents", amount);
        outbox.send(tx, OutboxMessage.builder(StepKey.of(idempotencyKey, PROCESS_PAYMENT), Brokers.PAYMENTS)
                .routingKey(orderId)
                .contentType("application/json")
                .payload(Json.write(payment))
                .build());
        Map<String, Object> response = new LinkedHashMap<>();
        response.put("orderId", orderId);
        response.put("status", "PENDING");
        return Json.write(response);
    }

    /** Ends the saga: {@code K:complete-order} or {@code K:cancel-order}. */
    byte[] onUpdate(Connection tx, InboundMessage message) throws SQLException {
        StepKey step = StepKey.parse(message.key());
        String status = switch (step.step()) {
            case COMPLETE_ORDER -> "COMPLETED";
            case CANCEL_ORDER -> "CANCELLED";
            default -> throw new IllegalArgumentException("order service has no step " + step.step());
        };
        String orderId = Json.read(message.payload()).path("orderId").asText();
        try (PreparedStatement ps = tx.prepareStatement("UPDATE " + db.table("orders")
                + " SET status = ?, updated_at = CURRENT_TIMESTAMP WHERE order_id = ?")) {
            ps.setString(1, status);
            ps.setString(2, orderId);
            if (ps.executeUpdate() != 1) {
                throw new IllegalStateException("no order " + orderId + " for " + step);
            }
        }
        event(tx, orderId, status, step.value());
        return null;
    }

    private void event(Connection tx, String orderId, String event, String key) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + db.table("order_events")
                + " (order_id, event, step_key) VALUES (?, ?, ?)")) {
            ps.setString(1, orderId);
            ps.setString(2, event);
            ps.setString(3, key);
            ps.executeUpdate();
        }
    }

    @Override
    protected void routes(Relay.Builder relay) {
        Publisher kafka = brokers.kafkaPublisher("order-relay");
        relay.route(Brokers.PAYMENTS, brokers.route(kafka, Brokers.PAYMENTS));
    }

    @Override
    protected void afterConsumersStopped() {
        brokers.rewind(name + "-updates", Brokers.ORDER_UPDATES, brokers.settings().chaos().rewindRecords());
    }

    @Override
    protected List<AutoCloseable> startConsumers() {
        return brokers.kafkaConsumers(Brokers.ORDER_UPDATES, name + "-updates", 2, updatesInbox, db.dataSource(),
                this::onUpdate);
    }

    @Override
    public synchronized void close() {
        http.close();
        super.close();
    }
}
