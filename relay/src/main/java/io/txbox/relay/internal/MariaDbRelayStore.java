package io.txbox.relay.internal;

import static io.txbox.internal.mariadb.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.mariadb.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.mariadb.schema.tables.TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.JsonStrings;
import io.txbox.internal.Jooq;
import io.txbox.internal.MissingTables;
import io.txbox.internal.OutboxColumns;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.relay.PublishRecord;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The relay's statements on MariaDB 10.6+ and MySQL 8.0+, rendered once per relay: strings around
 * the generated table names, since the forms they need (a JSON array parameter read with {@code
 * JSON_TABLE} where PostgreSQL binds an array, {@code ON DUPLICATE KEY UPDATE}, {@code INSERT ...
 * SELECT} for the dead letters where PostgreSQL deletes and inserts in one statement) are written
 * the same for both servers. The claim query is {@link #claim}.
 *
 * <p><b>The worker's connection runs at READ COMMITTED</b> ({@link #prepareSession}): each claim
 * of a transaction's chained batches sees the rows committed since the transaction began, and a
 * locking statement (the lanes' {@code FOR UPDATE}) locks only the rows it returns, where InnoDB's
 * default REPEATABLE READ also locks the gaps it scanned. The claim itself is a plain read.
 *
 * <p>Rows are changed by primary key, so no statement scans and locks a range: published rows by
 * one join of the batch's ids to the outbox ({@link #delete}), the rest one key at a time in JDBC
 * batches ({@link #retry}, {@link #deadLetter}, lane updates). Times are read as
 * epoch seconds ({@code UNIX_TIMESTAMP}) and ages computed by the server, so the session's time
 * zone never shifts them.
 */
final class MariaDbRelayStore implements RelayStore {
    static final String NOW = "CURRENT_TIMESTAMP(6)";
    /**
     * A JSON array parameter of numbers as a table {@code j(v)} of {@code type}: joined first
     * ({@code STRAIGHT_JOIN}), it reaches each row of the next table by its primary key.
     */
    static final String IDS_TABLE = "JSON_TABLE(?, '$[*]' COLUMNS (v %s PATH '$')) AS j";
    /** {@link #IDS_TABLE} as a subquery of its one column. */
    static final String IDS = "(SELECT j.v FROM " + IDS_TABLE + ")";

    private final Dialect dialect;
    private final String schema;
    private final MariaDbLaneStore lanes;
    private final ClaimStatements claims;
    private final String delete;
    private final String retry;
    private final String hold;
    private final String unhold;
    private final String deadLetter;
    private final String backlog;
    private final String tablesIn;

    MariaDbRelayStore(TxboxTables tables, Dialect dialect) {
        this.dialect = dialect;
        this.schema = tables.schema();
        DSLContext r = Jooq.renderer(tables, dialect);
        lanes = new MariaDbLaneStore(tables, dialect);
        String o = r.render(TXBOX_OUTBOX);
        String d = r.render(TXBOX_OUTBOX_DEAD);
        String h = r.render(TXBOX_OUTBOX_KEY_HOLD);
        String lanesParam = String.format(IDS, "smallint");


        String columns = OutboxColumns.MESSAGE.stream().map(Field::getName).collect(Collectors.joining(", "));
        // the statement's own time comes back with the rows: CURRENT_TIMESTAMP moves within a
        // transaction here, and the transaction's chained claims take only rows due by then
        // a held key's rows above the row it is held at stay out (the hold table is small)
        String notHeld = " AND NOT EXISTS (SELECT 1 FROM " + h + " h WHERE h.lane = %1$s.lane AND h.row_id < %1$s.id"
                + " AND h.destination = %1$s.destination AND h.routing_key = %1$s.routing_key)";
        String claimed = "SELECT id, " + columns + ", UNIX_TIMESTAMP(created_at), attempts, UNIX_TIMESTAMP(" + NOW
                + ") FROM " + o + " WHERE lane IN " + lanesParam + " AND available_at <= " + NOW + String.format(notHeld, o);
        // only while a destination waits for its target: its rows stay unclaimed, in order
        String skipping = " AND NOT JSON_CONTAINS(?, JSON_QUOTE(destination))";
        String after = " AND id > ?";
        // a chained claim (RelayStore.claimAfter): due by the first claim's time, and only while
        // no row committed between the first claim's start and the last id claimed
        String chained = after + " AND UNIX_TIMESTAMP(available_at) <= ?";
        String late = "SELECT count(*) FROM " + o + " g WHERE g.lane IN " + lanesParam;
        String lateTail = " AND UNIX_TIMESTAMP(g.available_at) <= ? AND g.id > ? AND g.id <= ?" + String.format(notHeld, "g");
        String noLateRow = " AND (" + late + lateTail + ") = ?";
        String noLateRowSkipping = " AND (" + late + " AND NOT JSON_CONTAINS(?, JSON_QUOTE(g.destination))" + lateTail + ") = ?";
        // no row locks, as PostgresRelayStore's claim: the locked lanes with their fences make the worker the only claimant
        String tail = " ORDER BY id LIMIT ?";
        claims = new ClaimStatements(claimed + tail, claimed + skipping + tail, claimed + after + tail,
                claimed + skipping + after + tail, claimed + chained + noLateRow + tail,
                claimed + skipping + chained + noLateRowSkipping + tail);

        // the ids first, then each outbox row by its primary key (see delete)
        delete = "DELETE o FROM " + IDS_TABLE.formatted("bigint") + " STRAIGHT_JOIN " + o + " AS o ON o.id = j.v";
        retry = "UPDATE " + o + " SET attempts = attempts + ?, last_error = ?, available_at = " + NOW
                + " + INTERVAL ? MICROSECOND WHERE id = ?";
        // a parked hold keeps the time it was first parked; a retried one stays as it is
        hold = "INSERT INTO " + h + " (row_id, lane, destination, routing_key, parked_at) VALUES (?, ?, ?, ?, CASE WHEN ? THEN "
                + NOW + " END) ON DUPLICATE KEY UPDATE parked_at = COALESCE(parked_at, VALUES(parked_at))";
        unhold = "DELETE FROM " + h + " WHERE row_id = ?";

        // A row retried from the dead letters keeps its id; if it dies again, the new reason wins.
        String row = OutboxColumns.ROW.stream().map(Field::getName).collect(Collectors.joining(", "));
        deadLetter = "INSERT INTO " + d + " (" + row + ", attempts, reason) SELECT " + row + ", attempts + ?, ? FROM " + o
                + " WHERE id = ? ON DUPLICATE KEY UPDATE attempts = VALUES(attempts), reason = VALUES(reason),"
                + " dead_at = " + NOW;

        // O(1) in the backlog, as PostgresRelayStore's: a capped count, the id span, the lowest id's age
        backlog = "SELECT (SELECT count(*) FROM (SELECT 1 FROM " + o + " ORDER BY id LIMIT "
                + (EXACT_BACKLOG_LIMIT + 1) + ") AS s),"
                + " (SELECT COALESCE(max(id) - min(id) + 1, 0) FROM " + o + "),"
                + " COALESCE((SELECT TIMESTAMPDIFF(MICROSECOND, created_at, " + NOW + ") FROM " + o
                + " ORDER BY id LIMIT 1) DIV 1000, 0)";
        tablesIn = "SELECT table_name FROM information_schema.tables WHERE table_schema = ?";
    }

    /** {@code lanes} as the JSON array parameter the lane lists bind. */
    static String json(Collection<? extends Number> numbers) {
        return numbers.stream().map(String::valueOf).collect(Collectors.joining(",", "[", "]"));
    }

    /** {@code ids} as a JSON array parameter. */
    static String json(long[] ids) {
        return json(java.util.Arrays.stream(ids).boxed().toList());
    }

    /** Epoch seconds with microseconds, as {@code UNIX_TIMESTAMP} returns them, as an instant. */
    static Instant instant(BigDecimal epochSeconds) {
        BigDecimal micros = epochSeconds.movePointRight(6);
        return Instant.EPOCH.plusNanos(micros.longValue() * 1000);
    }

    static long micros(long millis) {
        return Math.multiplyExact(millis, 1000L);
    }

    @Override
    public void prepareSession(Connection c, Duration laneLease) throws SQLException {
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        // session settings, the server's own; a lock wait or a statement never outlives the lane lease
        long seconds = Math.max(1, (laneLease.toMillis() + 999) / 1000);
        try (Statement s = c.createStatement()) {
            s.execute("SET SESSION innodb_lock_wait_timeout = " + seconds);
            if (dialect == Dialect.MARIADB) {
                s.execute("SET SESSION max_statement_time = " + laneLease.toMillis() / 1000.0);
                s.execute("SET SESSION idle_transaction_timeout = " + seconds);
            } else {
                s.execute("SET SESSION max_execution_time = " + laneLease.toMillis());
            }
        }
    }

    @Override
    public void resetSession(Connection c) throws SQLException {
        String isolation = dialect == Dialect.MARIADB ? "@@GLOBAL.tx_isolation" : "@@GLOBAL.transaction_isolation";
        String level;
        try (Statement s = c.createStatement()) {
            s.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
            if (dialect == Dialect.MARIADB) {
                s.execute("SET SESSION max_statement_time = DEFAULT");
                s.execute("SET SESSION idle_transaction_timeout = DEFAULT");
            } else {
                s.execute("SET SESSION max_execution_time = DEFAULT");
            }
            try (ResultSet rs = s.executeQuery("SELECT " + isolation)) {
                rs.next();
                level = rs.getString(1).toUpperCase(Locale.ROOT);
            }
        }
        c.setTransactionIsolation(switch (level) {
            case "READ-UNCOMMITTED" -> Connection.TRANSACTION_READ_UNCOMMITTED;
            case "READ-COMMITTED" -> Connection.TRANSACTION_READ_COMMITTED;
            case "SERIALIZABLE" -> Connection.TRANSACTION_SERIALIZABLE;
            default -> Connection.TRANSACTION_REPEATABLE_READ;
        });
    }

    @Override
    public LaneStore lanes() {
        return lanes;
    }

    @Override
    public Claimed claim(Connection c, List<Short> lanes, int limit, List<String> skipDestinations) throws SQLException {
        return claim(c, lanes, limit, skipDestinations, -1, null);
    }

    @Override
    public Claimed claimAfter(Connection c, List<Short> lanes, int limit, List<String> skipDestinations, long afterId,
            @Nullable Chain chain) throws SQLException {
        return claim(c, lanes, limit, skipDestinations, afterId, chain);
    }

    /** Without {@code PROCESS} no session sees the others' transactions, so the claim floor stays at the lowest id. */
    @Override
    public @Nullable Set<String> outboxWriters(Connection c) {
        return null;
    }

    /** {@link #claim}, restricted to ids above {@code afterId} unless it is negative, and guarded as {@code chain} says. */
    private Claimed claim(Connection c, List<Short> lanes, int limit, List<String> skipDestinations, long afterId,
            @Nullable Chain chain) throws SQLException {
        List<PublishRecord> rows = new ArrayList<>(Math.min(limit, 1024));
        short[] rowLanes = new short[limit];
        boolean skip = !skipDestinations.isEmpty();
        boolean after = afterId >= 0;
        BigDecimal statementTime = null;
        boolean chained = after && chain != null && chain.dueBy() != null;
        String sql = claims.pick(after, chained, skip);
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            String laneJson = json(lanes);
            String skipJson = skip ? JsonStrings.encode(skipDestinations) : null;
            int i = 1;
            ps.setString(i++, laneJson);
            if (skip) {
                ps.setString(i++, skipJson);
            }
            if (after) {
                ps.setLong(i++, afterId);
            }
            if (chained) {
                ps.setBigDecimal(i++, chain.dueBy());
                ps.setString(i++, laneJson);
                if (skip) {
                    ps.setString(i++, skipJson);
                }
                ps.setBigDecimal(i++, chain.dueBy());
                i = chain.bindGuard(ps, i, afterId);
            }
            ps.setInt(i, limit);
            try (ResultSet rs = ps.executeQuery()) {
                // id, the message in OutboxColumns.MESSAGE order (lane the 6th column), created_at, attempts, now
                while (rs.next()) {
                    statementTime = rs.getBigDecimal(15);
                    rowLanes[rows.size()] = rs.getShort(6);
                    rows.add(new PublishRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getBytes(7), headers(rs.getString(8), rs.getString(9)), rs.getString(10),
                            rs.getString(11), rs.getString(12), rs.getInt(14), instant(rs.getBigDecimal(13))));
                }
            }
        }
        return new Claimed(rows, rowLanes, statementTime);
    }

    private static Map<String, String> headers(String names, String values) {
        if (names == null || values == null) {
            return Map.of();
        }
        List<String> n = JsonStrings.decode(names);
        List<String> v = JsonStrings.decode(values);
        Map<String, String> headers = new LinkedHashMap<>(n.size() * 2);
        for (int i = 0; i < n.size() && i < v.size(); i++) {
            headers.put(n.get(i), v.get(i));
        }
        return headers;
    }

    @Override
    public void delete(Connection c, long[] ids) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        // One statement that reads the batch's ids and then each outbox row by its primary key
        // (STRAIGHT_JOIN keeps that order), never an IN list: when a batch's ids are a large share of
        // the outbox, the optimizer scans the table for an IN list, and a scanning delete waits for
        // the lock of every row it reads, a sender's uncommitted one too. A sender's transaction
        // open past the lane lease then ends the delete at the statement limit, and the batch, already
        // published, rolls back and is published again.
        try (PreparedStatement ps = c.prepareStatement(delete)) {
            ps.setString(1, json(ids));
            ps.executeUpdate();
        }
    }

    @Override
    public void retry(Connection c, long[] ids, String[] errors, long[] delayMillis, int[] addAttempts) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(retry)) {
            for (int i = 0; i < ids.length; i++) {
                ps.setInt(1, addAttempts[i]);
                ps.setString(2, errors[i]);
                ps.setLong(3, micros(delayMillis[i]));
                ps.setLong(4, ids[i]);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    @Override
    public void hold(Connection c, List<PublishRecord> rows, short[] lanes, boolean parked) throws SQLException {
        if (rows.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(hold)) {
            for (int i = 0; i < rows.size(); i++) {
                PublishRecord row = rows.get(i);
                ps.setLong(1, row.id());
                ps.setShort(2, lanes[i]);
                ps.setString(3, row.destination());
                ps.setString(4, row.routingKey());
                ps.setBoolean(5, parked);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    @Override
    public void unhold(Connection c, long[] ids) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(unhold)) {
            for (long id : ids) {
                ps.setLong(1, id);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    @Override
    public void deadLetter(Connection c, long[] ids, String[] reasons, int[] addAttempts) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(deadLetter)) {
            for (int i = 0; i < ids.length; i++) {
                ps.setInt(1, addAttempts[i]);
                ps.setString(2, reasons[i]);
                ps.setLong(3, ids[i]);
                ps.addBatch();
            }
            ps.executeBatch();
        }
        delete(c, ids);
    }

    @Override
    public long[] backlog(Connection c, int timeoutSeconds) throws SQLException {
        return RelayStore.backlog(c, backlog, timeoutSeconds);
    }

    @Override
    public List<String> missingTables(Connection c, List<String> names, List<String> qualified) throws SQLException {
        Set<String> present = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(tablesIn)) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    present.add(rs.getString(1));
                }
            }
        }
        Set<String> missing = new TreeSet<>(names);
        missing.removeAll(present);
        return new ArrayList<>(missing);
    }

    @Override
    public boolean isUndefinedTable(Throwable e) {
        return MissingTables.isUndefinedTable(e);
    }
}
