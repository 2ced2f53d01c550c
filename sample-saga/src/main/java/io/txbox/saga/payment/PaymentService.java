package io.txbox.saga.payment;

import com.fasterxml.jackson.databind.JsonNode;
import io.txbox.inbox.Claim;
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
import io.txbox.saga.gateway.ChargeResult;
import io.txbox.saga.gateway.GatewayTimeoutException;
import io.txbox.saga.gateway.PaymentGateway;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Payment service: receives {@code K:process-payment} from Kafka, charges the external
 * gateway, and emits {@code K:arrange-shipping} (RabbitMQ) or, when the card is declined,
 * {@code K:cancel-order} (Kafka).
 *
 * <p>The gateway call is outside the database, so it runs in the inbox's two-phase mode: the
 * step key is claimed (committed, with a lease) before the call, and the gateway's answer is
 * stored with the claim right after it. A redelivery, or a retry after the business transaction
 * rolled back, finds the stored answer and does not call the gateway again; a concurrent one
 * finds the claim in flight and waits. Only a worker that dies between the call and storing the
 * answer leaves a key to be called again after the lease, and then the gateway's own
 * idempotency (the step key is its idempotency key) returns the first answer.
 *
 * <p>The delivery itself goes through the atomic inbox of the Kafka consumer, in the
 * transaction that writes the payment row and the next step.
 */
public final class PaymentService extends SagaService {
    public static final String CONSUMER = "payment";
    public static final String GATEWAY_CONSUMER = "payment-gateway";
    public static final String ARRANGE_SHIPPING = "arrange-shipping";
    public static final String CANCEL_ORDER = "cancel-order";
    /** How long a gateway call may take before another worker may try the key again. */
    static final Duration GATEWAY_LEASE = Duration.ofSeconds(5);

    private final Inbox deliveries;
    private final Inbox gatewayCalls;
    private final PaymentGateway gateway;

    public PaymentService(ServiceDb db, Brokers brokers, PaymentGateway gateway) {
        super("payment", db, brokers);
        this.gateway = gateway;
        this.deliveries = inbox(CONSUMER).maxAttempts(20).build();
        this.gatewayCalls = inbox(GATEWAY_CONSUMER).lease(GATEWAY_LEASE).maxAttempts(20).build();
    }

    /** The payment service's own table: one row per handled payment step, no unique key on the order. */
    public static String[] ddl(String schema) {
        return new String[] {
            "CREATE TABLE " + schema + ".payments (id bigserial PRIMARY KEY, order_id text NOT NULL,"
                    + " step_key text NOT NULL, charge_id text NOT NULL, approved boolean NOT NULL,"
                    + " at timestamptz NOT NULL DEFAULT clock_timestamp())",
            "CREATE INDEX payments_order_ix ON " + schema + ".payments (order_id)",
        };
    }

    byte[] onProcessPayment(Connection tx, InboundMessage message) throws SQLException {
        StepKey step = StepKey.parse(message.key());
        JsonNode request = Json.read(message.payload());
        String orderId = request.path("orderId").asText();
        long amount = request.path("amountCents").asLong();
        ChargeResult charge = charge(step, message, orderId, amount);

        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + db.table("payments")
                + " (order_id, step_key, charge_id, approved) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, orderId);
            ps.setString(2, step.value());
            ps.setString(3, charge.chargeId());
            ps.setBoolean(4, charge.approved());
            ps.executeUpdate();
        }
        Map<String, Object> next = new LinkedHashMap<>();
        next.put("orderId", orderId);
        next.put("chargeId", charge.chargeId());
        OutboxMessage out;
        if (charge.approved()) {
            out = OutboxMessage.builder(step.next(ARRANGE_SHIPPING), Brokers.SHIPPING)
                    .routingKey(orderId).contentType("application/json").payload(Json.write(next)).build();
        } else {
            next.put("reason", "payment declined");
            out = OutboxMessage.builder(step.next(CANCEL_ORDER), Brokers.ORDER_UPDATES)
                    .routingKey(orderId).contentType("application/json").payload(Json.write(next)).build();
        }
        outbox.send(tx, out);
        return Json.write(next);
    }

    /** The gateway call, at most once per step key unless a worker dies in the middle of it. */
    private ChargeResult charge(StepKey step, InboundMessage message, String orderId, long amount) {
        Claim claim = gatewayCalls.claim(db.dataSource(), InboundMessage.of(step.value(), message.payload()));
        switch (claim.status()) {
            case DUPLICATE:
                return decode(claim.result());
            case IN_FLIGHT:
                throw new IllegalStateException("gateway call for " + step + " is in flight elsewhere; retry later");
            case DEAD:
                throw new IllegalStateException("gateway call for " + step + " failed too often: " + claim.reason());
            default:
                break;
        }
        ChargeResult result;
        try {
            result = gateway.charge(step.value(), orderId, amount);
        } catch (GatewayTimeoutException e) {
            gatewayCalls.fail(db.dataSource(), claim, e);
            throw e;
        }
        gatewayCalls.complete(db.dataSource(), claim, encode(result));
        return result;
    }

    private static byte[] encode(ChargeResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("chargeId", r.chargeId());
        m.put("approved", r.approved());
        return Json.write(m);
    }

    private static ChargeResult decode(byte[] stored) {
        JsonNode n = Json.read(stored);
        return new ChargeResult(n.path("chargeId").asText(), n.path("approved").asBoolean(), true);
    }

    @Override
    protected void routes(Relay.Builder relay) {
        Publisher rabbit = brokers.rabbitPublisher("payment-relay-rabbit");
        Publisher kafka = brokers.kafkaPublisher("payment-relay-kafka");
        relay.route(Brokers.SHIPPING, brokers.route(rabbit, Brokers.SHIPPING));
        relay.route(Brokers.ORDER_UPDATES, brokers.route(kafka, Brokers.ORDER_UPDATES));
    }

    @Override
    protected void afterConsumersStopped() {
        brokers.rewind(name, Brokers.PAYMENTS, brokers.settings().chaos().rewindRecords());
    }

    @Override
    protected List<AutoCloseable> startConsumers() {
        return brokers.kafkaConsumers(Brokers.PAYMENTS, name, 4, deliveries, db.dataSource(), this::onProcessPayment);
    }
}
