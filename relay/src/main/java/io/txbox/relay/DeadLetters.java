package io.txbox.relay;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Operations on the outbox dead-letter table, for operators and the admin CLI: list, retry
 * (move back to the outbox), purge. Each call is one short transaction.
 *
 * <pre>{@code
 * DeadLetters dead = DeadLetters.of(dataSource, tables);
 * dead.list(20).forEach(System.out::println);
 * dead.retry(4711);
 * }</pre>
 *
 * <p>A retried row keeps its id, so it goes back to its old place in id order (before rows of
 * its routing key sent after it died), with attempts reset to 0.
 */
public final class DeadLetters {
    private final DataSource dataSource;
    private final String list;
    private final String retry;
    private final String retryAll;
    private final String purge;
    private final String count;

    private DeadLetters(DataSource dataSource, TxboxTables tables) {
        this.dataSource = dataSource;
        var r = Jooq.renderer(tables);
        String outbox = r.render(TXBOX_OUTBOX);
        String dead = r.render(TXBOX_OUTBOX_DEAD);
        String cols = "id, step_key, original_key, destination, routing_key, lane, payload, header_names, header_values,"
                + " content_type, traceparent, tracestate, created_at";
        list = "SELECT id, step_key, destination, routing_key, attempts, reason, created_at, dead_at FROM " + dead
                + " ORDER BY dead_at DESC, id DESC LIMIT ?";
        // a step key sent again since it died stays dead rather than colliding with the new row
        String move = "WITH gone AS (DELETE FROM " + dead + " AS d WHERE %s AND NOT EXISTS (SELECT 1 FROM " + outbox
                + " AS o WHERE o.step_key = d.step_key OR o.id = d.id) RETURNING d.*)"
                + " INSERT INTO " + outbox + " (" + cols + ", available_at, attempts, last_error) OVERRIDING SYSTEM VALUE"
                + " SELECT " + cols + ", now(), 0, 'retried from dead letters: ' || reason FROM gone";
        retry = String.format(move, "d.id = ?");
        retryAll = String.format(move, "true");
        purge = "DELETE FROM " + dead + " WHERE dead_at < now() - ? * interval '1 millisecond'";
        count = "SELECT count(*) FROM " + dead;
    }

    /** Dead letters of the outbox in {@code tables}, read and changed through {@code dataSource}. */
    public static DeadLetters of(DataSource dataSource, TxboxTables tables) {
        if (dataSource == null || tables == null) {
            throw new ConfigException("dataSource and tables must not be null");
        }
        return new DeadLetters(dataSource, tables);
    }

    /**
     * One dead-lettered row, without its payload.
     *
     * @param reason why it was dead-lettered (the last error, or "no route ...")
     */
    public record DeadLetter(long id, String stepKey, String destination, @Nullable String routingKey, int attempts,
            String reason, Instant createdAt, Instant deadAt) {}

    /** The newest {@code limit} dead letters, newest first. */
    public List<DeadLetter> list(int limit) {
        if (limit < 1) {
            throw new ConfigException("limit must be at least 1, but was " + limit);
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(list)) {
            ps.setInt(1, limit);
            List<DeadLetter> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new DeadLetter(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5),
                            rs.getString(6), rs.getObject(7, OffsetDateTime.class).toInstant(),
                            rs.getObject(8, OffsetDateTime.class).toInstant()));
                }
            }
            return out;
        } catch (SQLException e) {
            throw SqlErrors.translate("listing dead letters", e);
        }
    }

    /** Moves dead letter {@code id} back to the outbox; false if there is none with that id. */
    public boolean retry(long id) {
        return update(retry, "retrying dead letter " + id, ps -> ps.setLong(1, id)) > 0;
    }

    /** Moves every dead letter back to the outbox; returns how many. */
    public int retryAll() {
        return update(retryAll, "retrying all dead letters", ps -> {});
    }

    /** Deletes dead letters that died more than {@code age} ago; returns how many. */
    public int purgeOlderThan(Duration age) {
        if (age == null || age.isNegative()) {
            throw new ConfigException("age must be zero or positive, but was " + age);
        }
        return update(purge, "purging dead letters", ps -> ps.setLong(1, age.toMillis()));
    }

    /** Number of dead letters. */
    public long count() {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(count);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw SqlErrors.translate("counting dead letters", e);
        }
    }

    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    private int update(String sql, String what, Binder binder) {
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(true);
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                binder.bind(ps);
                return ps.executeUpdate();
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }
}
