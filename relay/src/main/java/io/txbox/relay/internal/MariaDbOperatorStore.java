package io.txbox.relay.internal;

import static io.txbox.internal.mariadb.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.mariadb.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.mariadb.schema.tables.TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD;
import static io.txbox.internal.mariadb.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.mariadb.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;
import io.txbox.internal.OutboxColumns;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.relay.DeadLetters;
import io.txbox.relay.RelayAdmin;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The operators' statements on MariaDB 10.6+ and MySQL 8.0+, rendered once: strings around the
 * generated table names, as {@link MariaDbRelayStore}'s. Times are read as epoch seconds and ages
 * computed by the server. A move back to the outbox takes three statements (pick with {@code SKIP
 * LOCKED}, copy with {@code INSERT IGNORE}, delete), so it needs the caller's transaction, which
 * {@link DeadLetters} opens for each batch.
 */
final class MariaDbOperatorStore implements OperatorStore {
    private static final String NOW = "CURRENT_TIMESTAMP(6)";

    private final String statusOutbox;
    private final String statusDead;
    private final String statusMembers;
    private final String statusLanes;
    private final String list;
    private final String pickOne;
    private final String pickFrom;
    private final String requeue;
    private final String deleteDead;
    private final String purge;
    private final String countOlder;
    private final String count;
    private final ParkedKeys parked;

    MariaDbOperatorStore(TxboxTables tables, Dialect dialect) {
        DSLContext r = Jooq.renderer(tables, dialect);
        String o = r.render(TXBOX_OUTBOX);
        String d = r.render(TXBOX_OUTBOX_DEAD);
        parked = new ParkedKeys(r.render(TXBOX_OUTBOX_KEY_HOLD), o, d, "UNIX_TIMESTAMP(%s)", NOW,
                (rs, i) -> MariaDbRelayStore.instant(rs.getBigDecimal(i)));
        statusOutbox = "SELECT count(*), COALESCE(SUM(available_at <= " + NOW + "), 0),"
                + " TIMESTAMPDIFF(MICROSECOND, MIN(created_at), " + NOW + ") FROM " + o;
        statusDead = "SELECT count(*), UNIX_TIMESTAMP(MIN(dead_at)) FROM " + d;
        statusMembers = "SELECT count(*) FROM " + r.render(TXBOX_RELAY_MEMBER) + " WHERE lease_until > " + NOW;
        statusLanes = "SELECT count(*) FROM " + r.render(TXBOX_RELAY_LANE) + " WHERE owner IS NOT NULL AND lease_until > " + NOW;

        list = "SELECT id, step_key, destination, routing_key, attempts, reason, UNIX_TIMESTAMP(created_at),"
                + " UNIX_TIMESTAMP(dead_at), CASE WHEN ? THEN payload END FROM " + d
                + " WHERE ? IS NULL OR destination = ? ORDER BY dead_at DESC, id DESC LIMIT ?";
        String pick = " ORDER BY id LIMIT " + DeadLetters.BATCH + " FOR UPDATE SKIP LOCKED";
        pickOne = "SELECT id FROM " + d + " WHERE id = ?" + pick;
        pickFrom = "SELECT id FROM " + d + " WHERE id > ? AND (? IS NULL OR destination = ?)" + pick;
        // IGNORE: a step key (or id) pending again is dropped, not duplicated; the values come from a
        // table of the same column types, so no other error can be turned into a warning
        String cols = OutboxColumns.ROW.stream().map(Field::getName).collect(Collectors.joining(", "));
        requeue = "INSERT IGNORE INTO " + o + " (" + cols + ", available_at, attempts, last_error) SELECT " + cols + ", "
                + NOW + ", 0, CONCAT('retried from dead letters: ', reason) FROM " + d + " WHERE id IN"
                + " (SELECT j.v FROM JSON_TABLE(?, '$[*]' COLUMNS (v bigint PATH '$')) AS j) ORDER BY id";
        deleteDead = "DELETE FROM " + d + " WHERE id = ?";
        String older = " WHERE dead_at < " + NOW + " - INTERVAL ? MICROSECOND";
        purge = "DELETE FROM " + d + older + " ORDER BY id LIMIT " + DeadLetters.BATCH;
        countOlder = "SELECT count(*) FROM " + d + older;
        count = "SELECT count(*) FROM " + d;
    }

    @Override
    public ParkedKeys parkedKeys() {
        return parked;
    }

    @Override
    public RelayAdmin.Status status(Connection c) throws SQLException {
        return OperatorStore.status(c, statusOutbox, statusDead, statusMembers, statusLanes, MariaDbOperatorStore::oldestAge,
                MariaDbOperatorStore::oldestDead);
    }

    /** The age of the oldest outbox row, computed by the server in microseconds. */
    private static @Nullable Duration oldestAge(ResultSet rs) throws SQLException {
        long micros = rs.getLong(3);
        return rs.wasNull() ? null : Duration.ofNanos(micros * 1000);
    }

    private static @Nullable Instant oldestDead(ResultSet rs) throws SQLException {
        BigDecimal oldestDead = rs.getBigDecimal(2);
        return oldestDead == null ? null : MariaDbRelayStore.instant(oldestDead);
    }

    @Override
    public List<DeadLetters.DeadLetter> listDead(Connection c, int limit, @Nullable String destination, boolean withPayload)
            throws SQLException {
        return OperatorStore.listDead(c, list, limit, destination, withPayload, (rs, i) -> MariaDbRelayStore.instant(rs.getBigDecimal(i)));
    }

    @Override
    public Moved retryDead(Connection c, long id) throws SQLException {
        return OperatorStore.retryOne(c, pickOne, id, this::move);
    }

    @Override
    public Moved retryDeadAfter(Connection c, long afterId, @Nullable String destination) throws SQLException {
        return OperatorStore.retryAfter(c, pickFrom, afterId, destination, this::move);
    }

    /** Locks the dead rows {@code pick} selects, copies them back to the outbox and deletes them. */
    private Moved move(Connection c, PreparedStatement pick) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (ResultSet rs = pick.executeQuery()) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        if (ids.isEmpty()) {
            return new Moved(0, 0, 0);
        }
        int requeued;
        try (PreparedStatement ps = c.prepareStatement(requeue)) {
            ps.setString(1, MariaDbRelayStore.json(ids));
            requeued = ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(deleteDead)) {
            for (long id : ids) {
                ps.setLong(1, id);
                ps.addBatch();
            }
            ps.executeBatch();
        }
        if (requeued > 0) {
            parked.unparkRequeued(c);
        }
        return new Moved(ids.size(), requeued, ids.get(ids.size() - 1));
    }

    @Override
    public int purgeDead(Connection c, long ageMillis) throws SQLException {
        return OperatorStore.purge(c, purge, Math.multiplyExact(ageMillis, 1000L), parked);
    }

    @Override
    public long countDeadOlder(Connection c, long ageMillis) throws SQLException {
        return OperatorStore.single(c, countOlder, Math.multiplyExact(ageMillis, 1000L));
    }

    @Override
    public long countDead(Connection c) throws SQLException {
        return OperatorStore.single(c, count);
    }
}
