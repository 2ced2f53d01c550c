package io.txbox.inbox;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.StoredHeaders;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The parked-messages table of one database vendor ({@code <prefix>inbox_parked}): every
 * statement {@link ParkedKeys} runs. The vendors differ in quoting, in how an insert that meets
 * the unique key does nothing, in the share lock of a read and in the clock arithmetic; those
 * differences are the constructor's, the binding is one. Runs on the connection it is given and
 * never commits, rolls back or closes it.
 */
final class ParkedStore {
    /** One parked message, as a resolution reads it. */
    record Row(long id, String messageKey, boolean head, byte[] payload, Map<String, String> headers,
            @Nullable String reason) {
        InboundMessage message() {
            return new InboundMessage(messageKey, payload, headers, null, true);
        }
    }

    private final String firstOfKey;
    private final String firstOfKeyLocked;
    private final String insert;
    private final String delete;
    private final String makeHead;
    private final String unreceive;
    private final String completeSkipped;
    private final String listOne;
    private final String listAll;
    private final String stats;
    private final String request;
    private final String requested;

    ParkedStore(TxboxTables tables, Dialect dialect) {
        boolean my = dialect.isMysqlFamily();
        char q = my ? '`' : '"';
        String t = q + tables.schema() + q + "." + q + tables.prefix() + "inbox_parked" + q;
        String inbox = q + tables.schema() + q + "." + q + tables.inboxTable() + q;
        String now = my ? "CURRENT_TIMESTAMP(6)" : "now()";
        String columns = "SELECT id, message_key, head, payload, headers, reason FROM " + t
                + " WHERE consumer = ? AND ordering_key = ? ORDER BY id LIMIT 1";
        this.firstOfKey = columns;
        // A share lock: a resolution deleting the key's last row waits for this transaction (which
        // may park behind it), and this read waits for the resolution, then sees what it left.
        this.firstOfKeyLocked = "SELECT id FROM " + t + " WHERE consumer = ? AND ordering_key = ? ORDER BY id LIMIT 1"
                + (my ? " LOCK IN SHARE MODE" : " FOR SHARE");
        this.insert = "INSERT INTO " + t
                + " (consumer, ordering_key, message_key, head, payload, headers, reason) VALUES (?, ?, ?, ?, ?, ?, ?)"
                + (my ? " ON DUPLICATE KEY UPDATE id = id" : " ON CONFLICT (consumer, message_key) DO NOTHING");
        this.delete = "DELETE FROM " + t + " WHERE id = ?";
        this.makeHead = "UPDATE " + t + " SET head = ?, reason = ?, requested = NULL WHERE id = ?";
        this.unreceive = "DELETE FROM " + inbox + " WHERE consumer = ? AND message_key = ?";
        this.completeSkipped = "UPDATE " + inbox + " SET status = 'COMPLETED', completed_at = " + now
                + ", lease_until = NULL, last_error = ? WHERE consumer = ? AND message_key = ? AND status <> 'COMPLETED'";
        String group = "SELECT consumer, ordering_key, COUNT(*), MIN(parked_at),"
                + " MAX(CASE WHEN head THEN message_key END), MAX(CASE WHEN head THEN reason END), MAX(requested) FROM "
                + t;
        String grouped = " GROUP BY consumer, ordering_key ORDER BY MIN(id) LIMIT ?";
        this.listOne = group + " WHERE consumer = ?" + grouped;
        this.listAll = group + grouped;
        String ageMicros = my ? "TIMESTAMPDIFF(MICROSECOND, MIN(parked_at), " + now + ")"
                : "CAST(EXTRACT(EPOCH FROM " + now + " - MIN(parked_at)) * 1000000 AS bigint)";
        this.stats = "SELECT COUNT(*), COUNT(DISTINCT ordering_key), " + ageMicros + " FROM " + t + " WHERE consumer = ?";
        this.request = "UPDATE " + t + " SET requested = ? WHERE consumer = ? AND ordering_key = ?";
        this.requested = "SELECT DISTINCT ordering_key FROM " + t + " WHERE consumer = ? AND requested IS NOT NULL LIMIT ?";
    }

    /** Whether the key has parked messages; locks the first of them in share mode. */
    boolean isParked(Connection c, String consumer, String orderingKey, boolean lock) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lock ? firstOfKeyLocked : firstOfKey)) {
            ps.setString(1, consumer);
            ps.setString(2, orderingKey);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** Parks {@code m} behind its key (or as its head); a message parked already stays as it is. */
    void park(Connection c, String consumer, String orderingKey, InboundMessage m, boolean head,
            @Nullable String reason) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(insert)) {
            ps.setString(1, consumer);
            ps.setString(2, orderingKey);
            ps.setString(3, m.key());
            ps.setBoolean(4, head);
            ps.setBytes(5, m.payload());
            Map<String, List<String>> headers = new LinkedHashMap<>();
            m.headers().forEach((n, v) -> headers.put(n, List.of(v)));
            ps.setBytes(6, StoredHeaders.encode(headers));
            ps.setString(7, reason);
            ps.executeUpdate();
        }
    }

    /** Removes the entry this transaction's receive wrote for a message it parks instead. */
    void unreceive(Connection c, String consumer, String messageKey) throws SQLException {
        update(c, unreceive, consumer, messageKey);
    }

    /** The key's first parked message, or {@code null} when the key is not parked. */
    @Nullable Row first(Connection c, String consumer, String orderingKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(firstOfKey)) {
            ps.setString(1, consumer);
            ps.setString(2, orderingKey);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                Map<String, String> headers = new LinkedHashMap<>();
                StoredHeaders.decode(rs.getBytes(5)).forEach((n, vs) -> headers.put(n, vs.get(vs.size() - 1)));
                return new Row(rs.getLong(1), rs.getString(2), rs.getBoolean(3), rs.getBytes(4), headers,
                        rs.getString(6));
            }
        }
    }

    /** Deletes one parked message; the rows deleted (0 or 1). */
    int delete(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(delete)) {
            ps.setLong(1, id);
            return ps.executeUpdate();
        }
    }

    /** Makes a parked message the head of its key, with the reason it stopped there. */
    void makeHead(Connection c, long id, String reason) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(makeHead)) {
            ps.setBoolean(1, true);
            ps.setString(2, reason);
            ps.setLong(3, id);
            ps.executeUpdate();
        }
    }

    /** Completes a skipped head's inbox entry without a result, so a redelivery of it is a duplicate. */
    void completeSkipped(Connection c, String consumer, String messageKey) throws SQLException {
        update(c, completeSkipped, "skipped by an operator", consumer, messageKey);
    }

    /** Parked keys, oldest first: of {@code consumer}, or of every consumer when null. */
    List<ParkedKey> list(Connection c, @Nullable String consumer, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(consumer == null ? listAll : listOne)) {
            int i = 1;
            if (consumer != null) {
                ps.setString(i++, consumer);
            }
            ps.setInt(i, limit);
            List<ParkedKey> keys = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Timestamp since = rs.getTimestamp(4);
                    String req = rs.getString(7);
                    keys.add(new ParkedKey(rs.getString(1), rs.getString(2), rs.getString(5), rs.getString(6),
                            rs.getInt(3), since.toInstant(),
                            req == null ? null : ParkedKey.Action.valueOf(req)));
                }
            }
            return keys;
        }
    }

    /** Parked messages, parked keys and the oldest message's age in database time. */
    ParkedKeys.Stats stats(Connection c, String consumer) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(stats)) {
            ps.setString(1, consumer);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long micros = rs.getLong(3);
                return new ParkedKeys.Stats(rs.getLong(1), rs.getLong(2),
                        rs.wasNull() ? Duration.ZERO : Duration.ofNanos(Math.max(0, micros) * 1000));
            }
        }
    }

    /** Records an operator's request for the consumer to resolve the key; the rows changed. */
    int request(Connection c, String consumer, String orderingKey, ParkedKey.@Nullable Action action)
            throws SQLException {
        return update(c, request, action == null ? null : action.name(), consumer, orderingKey);
    }

    /** Up to {@code limit} keys of the consumer with a request waiting. */
    List<String> requested(Connection c, String consumer, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(requested)) {
            ps.setString(1, consumer);
            ps.setInt(2, limit);
            List<String> keys = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getString(1));
                }
            }
            return keys;
        }
    }

    private static int update(Connection c, String sql, @Nullable String... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setString(i + 1, params[i]);
            }
            return ps.executeUpdate();
        }
    }
}
