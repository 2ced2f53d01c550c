package io.txbox.saga;

import io.txbox.saga.order.OrderService;
import io.txbox.saga.payment.PaymentService;
import io.txbox.saga.shipping.ShippingService;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The end of a run: every figure is read from the services' tables and the gateway's ledger
 * after the services stopped, never from counters kept along the way. Only
 * {@code duplicate_requests} comes from the client, which alone sees replayed HTTP answers; the
 * order table is checked against it (one order per key).
 *
 * @param figures the report's fields, in order; see {@link #compute}
 */
public record SagaReport(Map<String, Object> figures) {

    /** Names of the four schemas a report reads. */
    public record Schemas(String order, String payment, String shipping, String gateway) {}

    public long figure(String name) {
        return ((Number) figures.get(name)).longValue();
    }

    public long orders() {
        return figure("orders");
    }

    public long lost() {
        return figure("lost");
    }

    public long doubleEffects() {
        return figure("double_effects");
    }

    public long duplicateDeliveries() {
        return figure("duplicate_deliveries");
    }

    public long completed() {
        return figure("completed");
    }

    public long cancelled() {
        return figure("cancelled");
    }

    /** Whether the run kept its promise: nothing lost, nothing done twice. */
    public boolean passed() {
        return lost() == 0 && doubleEffects() == 0;
    }

    /**
     * The run's verdict in words, printed last: {@code PASS: 1,000 orders, 0 lost, 0 double
     * effects, 216 duplicate deliveries absorbed}, or {@code FAIL: ...} with the same figures.
     */
    public String verdict() {
        return String.format(Locale.ROOT, "%s: %,d orders, %,d lost, %,d double effects, %,d duplicate deliveries absorbed",
                passed() ? "PASS" : "FAIL", orders(), lost(), doubleEffects(), duplicateDeliveries());
    }

    /** {@code SAGA-REPORT {json}}. */
    public String line() {
        return "SAGA-REPORT " + Json.text(figures);
    }

    /**
     * Reads the report from the tables.
     *
     * <ul>
     *   <li>{@code orders}: rows in {@code order.orders} (orders accepted over HTTP).
     *   <li>{@code completed}, {@code cancelled}: orders in that status.
     *   <li>{@code charges}: approved entries in the gateway's ledger.
     *   <li>{@code shipments}: rows in {@code shipping.shipments}.
     *   <li>{@code duplicate_deliveries}: deliveries the broker consumers' inboxes reported as
     *       DUPLICATE (the key had been processed), from each service's {@code deliveries} log.
     *   <li>{@code duplicate_requests}: HTTP requests answered with the stored response of an
     *       earlier one with the same key, counted by the client.
     *   <li>{@code lost}: accepted orders neither completed nor cancelled, plus keys the client got
     *       a success for that have no order at all.
     *   <li>{@code double_effects}: keys with more than one order, orders with more than one
     *       ledger entry, more than one payment row, more than one shipment, more than one
     *       ACCEPTED event or more than one final (COMPLETED/CANCELLED) event.
     * </ul>
     */
    static SagaReport compute(Connection c, Schemas s, OrderClient.Stats client, double seconds,
            Map<String, Object> extra) throws SQLException {
        String o = s.order();
        String p = s.payment();
        String sh = s.shipping();
        String g = s.gateway();
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("orders", count(c, "SELECT count(*) FROM " + o + ".orders"));
        f.put("completed", count(c, "SELECT count(*) FROM " + o + ".orders WHERE status = 'COMPLETED'"));
        f.put("cancelled", count(c, "SELECT count(*) FROM " + o + ".orders WHERE status = 'CANCELLED'"));
        f.put("charges", count(c, "SELECT count(*) FROM " + g + ".charges WHERE approved"));
        f.put("shipments", count(c, "SELECT count(*) FROM " + sh + ".shipments"));
        f.put("duplicate_deliveries", count(c, duplicateDeliveries(s)));
        f.put("duplicate_requests", client.duplicateRequests());
        long unfinished = count(c, "SELECT count(*) FROM " + o + ".orders WHERE status NOT IN ('COMPLETED', 'CANCELLED')");
        long missing = missingKeys(c, o, client.acceptedKeys());
        f.put("lost", unfinished + missing);

        Map<String, Object> doubles = new LinkedHashMap<>();
        doubles.put("orders_per_key", count(c, more(o + ".orders", "idempotency_key", null)));
        doubles.put("ledger_charges_per_order", count(c, more(g + ".charges", "order_id", null)));
        doubles.put("payments_per_order", count(c, more(p + ".payments", "order_id", null)));
        doubles.put("shipments_per_order", count(c, more(sh + ".shipments", "order_id", null)));
        doubles.put("accepted_events_per_order", count(c, more(o + ".order_events", "order_id", "event = 'ACCEPTED'")));
        doubles.put("final_events_per_order",
                count(c, more(o + ".order_events", "order_id", "event IN ('COMPLETED', 'CANCELLED')")));
        long doubleEffects = doubles.values().stream().mapToLong(v -> (Long) v).sum();
        f.put("double_effects", doubleEffects);
        f.put("seconds", Math.round(seconds * 10) / 10.0);

        // Extra fields that explain the figures above.
        f.put("declined", count(c, "SELECT count(*) FROM " + g + ".charges WHERE NOT approved"));
        f.put("gateway_calls", count(c, "SELECT count(*) FROM " + g + ".charge_calls"));
        f.put("gateway_replays", count(c, "SELECT count(*) FROM " + g + ".charge_calls WHERE replayed"));
        f.put("duplicate_requests_server", count(c, "SELECT count(*) FROM " + o + ".deliveries WHERE consumer = '"
                + OrderService.HTTP_CONSUMER + "' AND outcome = 'DUPLICATE'"));
        f.put("unfinished", unfinished);
        f.put("accepted_without_order", missing);
        f.put("inconsistent", count(c, inconsistent(s)));
        f.put("double_effect_detail", doubles);
        f.put("deliveries", deliveryOutcomes(c, s));
        f.putAll(extra);
        return new SagaReport(f);
    }

    /** Orders whose end contradicts the ledger: completed without a charge or a shipment, cancelled though charged. */
    static String inconsistent(Schemas s) {
        String o = s.order();
        return "SELECT count(*) FROM " + o + ".orders x WHERE"
                + " (x.status = 'COMPLETED' AND (NOT EXISTS (SELECT 1 FROM " + s.gateway() + ".charges c"
                + "   WHERE c.order_id = x.order_id AND c.approved)"
                + "   OR NOT EXISTS (SELECT 1 FROM " + s.shipping() + ".shipments h WHERE h.order_id = x.order_id)))"
                + " OR (x.status = 'CANCELLED' AND EXISTS (SELECT 1 FROM " + s.gateway() + ".charges c"
                + "   WHERE c.order_id = x.order_id AND c.approved))";
    }

    static String duplicateDeliveries(Schemas s) {
        return "SELECT count(*) FROM (" + brokerDeliveries(s) + ") d WHERE outcome = 'DUPLICATE'";
    }

    /** Deliveries of the three broker consumers; the HTTP inbox and the gateway's claims are counted apart. */
    private static String brokerDeliveries(Schemas s) {
        return "SELECT consumer, outcome FROM " + s.payment() + ".deliveries WHERE consumer = '" + PaymentService.CONSUMER
                + "' UNION ALL SELECT consumer, outcome FROM " + s.shipping() + ".deliveries WHERE consumer = '"
                + ShippingService.CONSUMER + "' UNION ALL SELECT consumer, outcome FROM " + s.order()
                + ".deliveries WHERE consumer = '" + OrderService.UPDATES_CONSUMER + "'";
    }

    private static Map<String, Object> deliveryOutcomes(Connection c, Schemas s) throws SQLException {
        Map<String, Object> m = new LinkedHashMap<>();
        String sql = "SELECT CONCAT(consumer, ':', outcome), count(*) FROM (" + brokerDeliveries(s)
                + " UNION ALL SELECT consumer, outcome FROM " + s.payment() + ".deliveries WHERE consumer = '"
                + PaymentService.GATEWAY_CONSUMER + "'"
                + " UNION ALL SELECT consumer, outcome FROM " + s.order() + ".deliveries WHERE consumer = '"
                + OrderService.HTTP_CONSUMER + "') d GROUP BY 1 ORDER BY 1";
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                m.put(rs.getString(1), rs.getLong(2));
            }
        }
        return m;
    }

    private static String more(String table, String column, String where) {
        return "SELECT count(*) FROM (SELECT " + column + " FROM " + table + (where == null ? "" : " WHERE " + where)
                + " GROUP BY " + column + " HAVING count(*) > 1) t";
    }

    /** Accepted keys with no order: read the orders' keys and compare here, the same on every database. */
    private static long missingKeys(Connection c, String orderSchema, List<String> keys) throws SQLException {
        java.util.Set<String> present = new java.util.HashSet<>();
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT idempotency_key FROM " + orderSchema + ".orders")) {
            while (rs.next()) {
                present.add(rs.getString(1));
            }
        }
        return keys.stream().filter(k -> !present.contains(k)).count();
    }

    static long count(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
