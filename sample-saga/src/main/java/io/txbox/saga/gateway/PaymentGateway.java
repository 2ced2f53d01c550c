package io.txbox.saga.gateway;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * A simulated external payment gateway with a ledger, like Stripe: it takes an idempotency key
 * with every charge, and charging a key twice returns the first answer without a second ledger
 * entry. It is "external": it lives in its own schema and the saga's services reach it only
 * through {@link #charge}.
 *
 * <p>Every call is logged in {@code charge_calls}, replays included, so the report can show how
 * many calls the payment service's two-phase inbox let through. The ledger {@code charges} has
 * the idempotency key as its primary key but no unique constraint on the order: a service that
 * charged one order under two keys would show up there as two entries.
 *
 * <p>Behaviour: a latency of a few milliseconds per call; amounts whose cents are 13, 33, 53, 73
 * or 93 are declined (5 %); a fraction of calls time out <em>after</em> the charge was written,
 * as when the response is lost on the way back.
 */
public final class PaymentGateway {
    private final DataSource ds;
    private final String schema;
    private final double timeoutRate;

    /**
     * @param ds the gateway's own pool
     * @param schema the gateway's schema, holding the tables of {@link #ddl}
     * @param timeoutRate fraction of calls, 0 to 1, whose answer is lost after the charge
     */
    public PaymentGateway(DataSource ds, String schema, double timeoutRate) {
        this.ds = ds;
        this.schema = schema;
        this.timeoutRate = timeoutRate;
    }

    /** The ledger and the call log, for {@code schema}. */
    public static String[] ddl(String schema) {
        return new String[] {
            "CREATE TABLE " + schema + ".charges ("
                    + " idempotency_key text PRIMARY KEY,"
                    + " charge_id text NOT NULL,"
                    + " order_id text NOT NULL,"
                    + " amount_cents bigint NOT NULL,"
                    + " approved boolean NOT NULL,"
                    + " created_at timestamptz NOT NULL DEFAULT clock_timestamp())",
            // no unique key: an order charged under two keys must show as two entries
            "CREATE INDEX charges_order_ix ON " + schema + ".charges (order_id)",
            "CREATE TABLE " + schema + ".charge_calls ("
                    + " id bigserial PRIMARY KEY,"
                    + " idempotency_key text NOT NULL,"
                    + " order_id text NOT NULL,"
                    + " replayed boolean NOT NULL,"
                    + " at timestamptz NOT NULL DEFAULT clock_timestamp())",
        };
    }

    /** Whether an amount is declined: cents of 13, 33, 53, 73 or 93. */
    public static boolean declines(long amountCents) {
        return amountCents % 20 == 13;
    }

    /**
     * Charges {@code amountCents} for {@code orderId} under {@code idempotencyKey}. A key that
     * was charged before returns the stored answer ({@link ChargeResult#replayed()}) and writes
     * no ledger entry.
     *
     * @throws GatewayTimeoutException now and then, after the charge was recorded
     */
    public ChargeResult charge(String idempotencyKey, String orderId, long amountCents) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        LockSupport.parkNanos(1_000_000L + random.nextLong(4_000_000L));
        boolean approved = !declines(amountCents);
        String chargeId = "ch_" + Long.toHexString(random.nextLong() & Long.MAX_VALUE);
        ChargeResult result;
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            // a key already charged inserts nothing: ON CONFLICT on PostgreSQL, IGNORE on MariaDB
            boolean postgres = c.getMetaData().getDatabaseProductName().equals("PostgreSQL");
            try (PreparedStatement insert = c.prepareStatement("INSERT " + (postgres ? "" : "IGNORE ") + "INTO " + schema
                    + ".charges (idempotency_key, charge_id, order_id, amount_cents, approved) VALUES (?, ?, ?, ?, ?)"
                    + (postgres ? " ON CONFLICT (idempotency_key) DO NOTHING" : ""))) {
                insert.setString(1, idempotencyKey);
                insert.setString(2, chargeId);
                insert.setString(3, orderId);
                insert.setLong(4, amountCents);
                insert.setBoolean(5, approved);
                if (insert.executeUpdate() == 1) {
                    result = new ChargeResult(chargeId, approved, false);
                } else {
                    result = stored(c, idempotencyKey);
                }
            }
            try (PreparedStatement log = c.prepareStatement("INSERT INTO " + schema + ".charge_calls"
                    + " (idempotency_key, order_id, replayed) VALUES (?, ?, ?)")) {
                log.setString(1, idempotencyKey);
                log.setString(2, orderId);
                log.setBoolean(3, result.replayed());
                log.executeUpdate();
            }
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException("payment gateway failed: " + e.getMessage(), e);
        }
        if (random.nextDouble() < timeoutRate) {
            throw new GatewayTimeoutException(idempotencyKey);
        }
        return result;
    }

    private ChargeResult stored(Connection c, String key) throws SQLException {
        try (PreparedStatement select = c.prepareStatement(
                "SELECT charge_id, approved FROM " + schema + ".charges WHERE idempotency_key = ?")) {
            select.setString(1, key);
            try (ResultSet rs = select.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("ledger entry for " + key + " vanished");
                }
                return new ChargeResult(rs.getString(1), rs.getBoolean(2), true);
            }
        }
    }
}
