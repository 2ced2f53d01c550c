package io.txbox.relay.internal;

import static io.txbox.internal.PostgresSql.column;
import static io.txbox.internal.PostgresSql.nowPlusMillis;
import static io.txbox.internal.PostgresSql.param;
import static io.txbox.internal.PostgresSql.sql;
import static io.txbox.internal.PostgresSql.unnest;
import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.schema.tables.TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.MissingTables;
import io.txbox.internal.OutboxColumns;
import io.txbox.internal.PostgresSql;
import io.txbox.internal.schema.tables.TxboxOutbox;
import io.txbox.internal.schema.tables.TxboxOutboxDead;
import io.txbox.internal.schema.tables.TxboxOutboxKeyHold;
import io.txbox.internal.shaded.jooq.CommonTableExpression;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Table;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import io.txbox.relay.PublishRecord;
import java.lang.reflect.Method;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The relay's statements on PostgreSQL, built with jOOQ's DSL from the generated tables and
 * rendered once per relay. What jOOQ cannot express (database time plus milliseconds, parallel
 * array parameters, the age of a row as an interval, session settings) comes from {@link
 * PostgresSql} or says why where it is written. The claim query is {@link #claim}.
 */
final class PostgresRelayStore implements RelayStore {
    /** PostgreSQL's {@code undefined_table}. */

    private static final TxboxOutbox O = TXBOX_OUTBOX;
    private static final TxboxOutboxDead D = TXBOX_OUTBOX_DEAD;
    private static final TxboxOutboxKeyHold H = TXBOX_OUTBOX_KEY_HOLD.as("h");
    private static final Field<OffsetDateTime> NOW = DSL.currentOffsetDateTime();
    /** The claim's columns: the row as it is published, plus its attempts so far. */
    private static final List<Field<?>> CLAIMED = OutboxColumns.concat(OutboxColumns.ROW, List.of(O.ATTEMPTS));
    private static final int CLAIM_LANE = CLAIMED.indexOf(O.LANE) + 1;

    private final PostgresLaneStore lanes;
    private final ClaimStatements claims;
    private final String delete;
    private final String retry;
    private final String hold;
    private final String unhold;
    private final String deadLetter;
    private final String backlog;
    private final String missingTables;
    private final String outboxWriters;

    PostgresRelayStore(TxboxTables tables) {
        DSLContext r = Jooq.renderer(tables);
        lanes = new PostgresLaneStore(tables);


        // only while a destination waits for its target: its rows stay unclaimed, in order
        Condition skipping = O.DESTINATION.ne(DSL.all(param(SQLDataType.VARCHAR.array())));
        // the next batch of a transaction that holds the rows up to the given id
        Condition after = O.ID.gt(param(SQLDataType.BIGINT));
        claims = new ClaimStatements(claimQuery(r, DSL.noCondition(), DSL.noCondition()),
                claimQuery(r, skipping, DSL.noCondition()), claimQuery(r, DSL.noCondition(), after),
                claimQuery(r, skipping, after), claimQuery(r, DSL.noCondition(), after.and(noLateRow(r, false))),
                claimQuery(r, skipping, after.and(noLateRow(r, true))));
        delete = sql(r.deleteFrom(O).where(O.ID.eq(DSL.any(param(SQLDataType.BIGINT.array())))));

        Table<?> f = unnest("f", List.of("id", "error", "delay_ms", "extra"), SQLDataType.BIGINT, SQLDataType.VARCHAR,
                SQLDataType.BIGINT, SQLDataType.INTEGER);
        retry = sql(r.update(O).set(O.ATTEMPTS, O.ATTEMPTS.plus(column("f", "extra", Integer.class)))
                .set(O.LAST_ERROR, column("f", "error", String.class))
                .set(O.AVAILABLE_AT, nowPlusMillis(column("f", "delay_ms", Long.class)))
                .from(f).where(O.ID.eq(column("f", "id", Long.class))));

        Table<?> k = unnest("k", List.of("id", "lane", "destination", "routing_key"), SQLDataType.BIGINT,
                SQLDataType.SMALLINT, SQLDataType.VARCHAR, SQLDataType.VARCHAR);
        TxboxOutboxKeyHold hk = TXBOX_OUTBOX_KEY_HOLD;
        // a parked hold keeps the time it was first parked; a retried one stays as it is
        hold = sql(r.insertInto(hk, hk.ROW_ID, hk.LANE, hk.DESTINATION, hk.ROUTING_KEY, hk.PARKED_AT)
                .select(r.select(column("k", "id", Long.class), column("k", "lane", Short.class),
                                column("k", "destination", String.class), column("k", "routing_key", String.class),
                                DSL.when(DSL.condition(param(SQLDataType.BOOLEAN)), NOW))
                        .from(k))
                .onConflict(hk.ROW_ID).doUpdate()
                .set(hk.PARKED_AT, DSL.coalesce(hk.PARKED_AT, DSL.excluded(hk.PARKED_AT))));
        unhold = sql(r.deleteFrom(hk).where(hk.ROW_ID.eq(DSL.any(param(SQLDataType.BIGINT.array())))));

        deadLetter = deadLetterStatement(r);
        backlog = backlogQuery(r);
        // a template: to_regclass, the catalog lookup that answers null for a missing table, has no jOOQ form
        // a template: pg_locks is a catalog view without generated types. A writer takes its
        // RowExclusiveLock (or a stronger one) when its statement starts, before any id; the
        // pid plus the virtual transaction id is never reused for another transaction
        outboxWriters = "SELECT coalesce(pid::text, '') || ':' || virtualtransaction FROM pg_locks WHERE locktype = 'relation'"
                + " AND relation = to_regclass('" + tables.qualified(tables.outboxTable()).replace("'", "''") + "')"
                + " AND mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')"
                + " AND pid IS DISTINCT FROM pg_backend_pid()";
        missingTables = sql(r.select(column("t", "n", String.class))
                .from(unnest("t", List.of("n", "q"), SQLDataType.VARCHAR, SQLDataType.VARCHAR))
                .where(DSL.field("to_regclass({0})", Object.class, column("t", "q", String.class)).isNull())
                .orderBy(column("t", "n", String.class)));
    }

    /**
     * No row locks: the batch transaction holds its lanes' rows locked with their fences, so no
     * other worker claims these lanes' rows meanwhile, and no other statement changes outbox rows.
     */
    private static String claimQuery(DSLContext r, Condition skip, Condition after) {
        return sql(r.select(CLAIMED)
                .from(O)
                .where(O.LANE.eq(DSL.any(param(SQLDataType.SMALLINT.array()))))
                .and(O.AVAILABLE_AT.le(NOW))
                .and(skip)
                .and(after)
                .and(notHeld(O))
                .orderBy(O.ID)
                .limit(param(SQLDataType.INTEGER)));
    }

    /**
     * A chained claim's guard ({@link RelayStore#claimAfter}): the due rows of the lanes between
     * the transaction's first claim and the last id it claimed are exactly the ones it holds.
     * Uncorrelated, so it runs once per claim.
     */
    private static Condition noLateRow(DSLContext r, boolean skipping) {
        TxboxOutbox g = O.as("g");
        Condition skip = skipping ? g.DESTINATION.ne(DSL.all(param(SQLDataType.VARCHAR.array()))) : DSL.noCondition();
        return DSL.field(r.selectCount().from(g)
                        .where(g.LANE.eq(DSL.any(param(SQLDataType.SMALLINT.array()))))
                        .and(g.AVAILABLE_AT.le(NOW))
                        .and(skip)
                        .and(g.ID.gt(param(SQLDataType.BIGINT)))
                        .and(g.ID.le(param(SQLDataType.BIGINT)))
                        .and(notHeld(g)))
                .eq(param(SQLDataType.INTEGER));
    }

    /**
     * The claim's per-key exclusion: no row of a held key above the row it is held at. The hold
     * table is small (keys with a failing or dead row), so this is an anti-join against a handful
     * of rows per lane; a row without a routing key matches no hold.
     */
    private static Condition notHeld(TxboxOutbox o) {
        return DSL.notExists(DSL.selectOne().from(H).where(H.LANE.eq(o.LANE)).and(H.ROW_ID.lt(o.ID))
                .and(H.DESTINATION.eq(o.DESTINATION)).and(H.ROUTING_KEY.eq(o.ROUTING_KEY)));
    }

    /**
     * One statement: delete the rows from the outbox and insert them into the dead letters with
     * their reasons. A row retried from the dead letters keeps its id; if it dies again, the new
     * reason wins.
     */
    private static String deadLetterStatement(DSLContext r) {
        Table<?> d = unnest("d", List.of("id", "reason", "extra"), SQLDataType.BIGINT, SQLDataType.VARCHAR,
                SQLDataType.INTEGER);
        List<Field<?>> returned = OutboxColumns.concat(OutboxColumns.ROW, List.of(O.ATTEMPTS,
                column("d", "reason", String.class).as("dead_reason"), column("d", "extra", Integer.class).as("dead_extra")));
        CommonTableExpression<?> gone = DSL.name("gone").as(
                r.deleteFrom(O).using(d).where(O.ID.eq(column("d", "id", Long.class))).returningResult(returned));
        List<Field<?>> into = OutboxColumns.concat(OutboxColumns.of(D, OutboxColumns.ROW), List.of(D.ATTEMPTS, D.REASON));
        List<Field<?>> values = OutboxColumns.concat(OutboxColumns.of(gone, OutboxColumns.ROW), List.of(
                gone.field(O.ATTEMPTS.getName(), Integer.class).plus(gone.field("dead_extra", Integer.class)),
                gone.field("dead_reason", String.class)));
        return sql(r.with(gone).insertInto(D).columns(into).select(r.select(values).from(gone))
                .onConflict(D.ID).doUpdate()
                .set(D.ATTEMPTS, DSL.excluded(D.ATTEMPTS))
                .set(D.REASON, DSL.excluded(D.REASON))
                .set(D.DEAD_AT, NOW));
    }

    /**
     * O(1) in the backlog: a count stopped after {@link #EXACT_BACKLOG_LIMIT} + 1 rows, the id span
     * and the lowest id's age, each read from the primary key's ends (a full count took 0.5 s at 1M
     * rows).
     */
    private static String backlogQuery(DSLContext r) {
        Field<Integer> head = DSL.field(r.selectCount()
                .from(r.selectOne().from(O).orderBy(O.ID).limit(DSL.inline(EXACT_BACKLOG_LIMIT + 1)).asTable("s")));
        Field<Long> span = DSL.field(r.select(DSL.coalesce(DSL.max(O.ID).minus(DSL.min(O.ID)).plus(DSL.inline(1L)), DSL.inline(0L)))
                .from(O));
        // a template: the age is an interval, and jOOQ's epoch() takes a point in time
        Field<Long> oldest = DSL.field(r.select(DSL.field("extract(epoch FROM {0} - {1}) * 1000",
                SQLDataType.NUMERIC, NOW, O.CREATED_AT)).from(O).orderBy(O.ID).limit(DSL.inline(1))).cast(SQLDataType.BIGINT);
        return sql(r.select(head, span, DSL.coalesce(oldest, DSL.inline(0L))));
    }

    @Override
    public void prepareSession(Connection c, Duration laneLease) throws SQLException {
        // session settings have no jOOQ form; they are PostgreSQL's own
        try (Statement s = c.createStatement()) {
            long guard = laneLease.toMillis();
            s.execute("SET idle_in_transaction_session_timeout = " + guard);
            s.execute("SET statement_timeout = " + guard);
            s.execute("SET synchronous_commit = off");
        }
    }

    @Override
    public void resetSession(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("RESET idle_in_transaction_session_timeout; RESET statement_timeout; RESET synchronous_commit;");
        }
    }

    @Override
    public LaneStore lanes() {
        return lanes;
    }

    @Override
    public Claimed claim(Connection c, List<Short> lanes, int limit, List<String> skipDestinations) throws SQLException {
        return claim(c, lanes, limit, skipDestinations, null, null);
    }

    /** A transaction's current time stands still here, so its claims share one due time without {@link Chain#dueBy}. */
    @Override
    public Claimed claimAfter(Connection c, List<Short> lanes, int limit, List<String> skipDestinations, long afterId,
            @Nullable Chain chain) throws SQLException {
        return claim(c, lanes, limit, skipDestinations, afterId, chain);
    }

    @Override
    public Set<String> outboxWriters(Connection c) throws SQLException {
        Set<String> writers = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(outboxWriters); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                writers.add(rs.getString(1));
            }
        }
        return writers;
    }

    private Claimed claim(Connection c, List<Short> lanes, int limit, List<String> skipDestinations, @Nullable Long afterId,
            @Nullable Chain chain) throws SQLException {
        List<PublishRecord> rows = new ArrayList<>(limit);
        short[] rowLanes = new short[limit];
        boolean skip = !skipDestinations.isEmpty();
        String sql = claims.pick(afterId != null, chain != null, skip);
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            BinaryRows.request(ps);
            Array laneArray = c.createArrayOf("int2", lanes.toArray());
            Array skipArray = skip ? c.createArrayOf("varchar", skipDestinations.toArray()) : null;
            int i = 1;
            ps.setArray(i++, laneArray);
            if (skip) {
                ps.setArray(i++, skipArray);
            }
            if (afterId != null) {
                ps.setLong(i++, afterId);
            }
            if (chain != null) {
                ps.setArray(i++, laneArray);
                if (skip) {
                    ps.setArray(i++, skipArray);
                }
                i = chain.bindGuard(ps, i, afterId);
            }
            ps.setInt(i, limit);
            try (ResultSet rs = ps.executeQuery()) {
                // columns in OutboxColumns.ROW order: id, the message (lane the 6th), created_at; then attempts.
                // created_at (timestamptz) through getTimestamp: the same instant as an OffsetDateTime,
                // without building zone rules per row
                while (rs.next()) {
                    rowLanes[rows.size()] = rs.getShort(CLAIM_LANE);
                    rows.add(new PublishRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getBytes(7), headers(rs.getArray(8), rs.getArray(9)), rs.getString(10),
                            rs.getString(11), rs.getString(12), rs.getInt(14), rs.getTimestamp(13).toInstant()));
                }
            }
        }
        return new Claimed(rows, rowLanes, null);
    }

    /**
     * Asks pgjdbc for the claim's rows in binary from the statement's first execution on each
     * connection ({@code PGStatement.setPrepareThreshold(-1)}: one extra describe round trip per
     * connection, then a named statement). By default pgjdbc sends a statement's first four
     * executions as unnamed statements whose rows come as text (the 400-byte payload as 800 hex
     * digits, {@code created_at} parsed from text through a {@code GregorianCalendar}) and switches
     * to binary on the fifth: a relay starting or on a new pooled connection then decodes both ways,
     * so its warm-up compiles the text decoders and the first binary batches deoptimize
     * {@code PgResultSet} and make the JIT compile the binary ones during the drain. A connection
     * configured with {@code prepareThreshold=0} (no named statements, as behind a transaction-mode
     * PgBouncer) is left as it is, as are other drivers and wrappers that do not unwrap.
     */
    private static final class BinaryRows {
        private static final @Nullable Class<?> PG_STATEMENT;
        private static final @Nullable Method GET_PREPARE_THRESHOLD;
        private static final @Nullable Method SET_PREPARE_THRESHOLD;

        static {
            Class<?> type = null;
            Method get = null;
            Method set = null;
            try {
                type = Class.forName("org.postgresql.PGStatement", false, PostgresRelayStore.class.getClassLoader());
                get = type.getMethod("getPrepareThreshold");
                set = type.getMethod("setPrepareThreshold", int.class);
            } catch (ReflectiveOperationException | LinkageError e) {
                type = null; // no pgjdbc on this class path: nothing to ask
            }
            PG_STATEMENT = type;
            GET_PREPARE_THRESHOLD = get;
            SET_PREPARE_THRESHOLD = set;
        }

        private BinaryRows() {}

        static void request(PreparedStatement ps) throws SQLException {
            Class<?> type = PG_STATEMENT;
            Method get = GET_PREPARE_THRESHOLD;
            Method set = SET_PREPARE_THRESHOLD;
            if (type == null || get == null || set == null || !ps.isWrapperFor(type)) {
                return;
            }
            try {
                Object pg = ps.unwrap(type);
                if ((Integer) get.invoke(pg) > 0) {
                    set.invoke(pg, -1);
                }
            } catch (ReflectiveOperationException | ClassCastException e) {
                // the driver's own default (text for the first executions) is correct, only slower
            }
        }
    }

    private static Map<String, String> headers(Array names, Array values) throws SQLException {
        if (names == null || values == null) {
            return Map.of();
        }
        String[] n = (String[]) names.getArray();
        String[] v = (String[]) values.getArray();
        Map<String, String> headers = new LinkedHashMap<>(n.length * 2);
        for (int i = 0; i < n.length && i < v.length; i++) {
            headers.put(n[i], v[i]);
        }
        return headers;
    }

    @Override
    public void delete(Connection c, long[] ids) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(delete)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            ps.executeUpdate();
        }
    }

    @Override
    public void retry(Connection c, long[] ids, String[] errors, long[] delayMillis, int[] addAttempts) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(retry)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            ps.setArray(2, c.createArrayOf("text", errors));
            ps.setArray(3, c.createArrayOf("int8", box(delayMillis)));
            ps.setArray(4, c.createArrayOf("int4", box(addAttempts)));
            ps.executeUpdate();
        }
    }

    @Override
    public void hold(Connection c, List<PublishRecord> rows, short[] lanes, boolean parked) throws SQLException {
        if (rows.isEmpty()) {
            return;
        }
        int n = rows.size();
        Long[] ids = new Long[n];
        Short[] rowLanes = new Short[n];
        String[] destinations = new String[n];
        String[] keys = new String[n];
        for (int i = 0; i < n; i++) {
            PublishRecord row = rows.get(i);
            ids[i] = row.id();
            rowLanes[i] = lanes[i];
            destinations[i] = row.destination();
            keys[i] = row.routingKey();
        }
        try (PreparedStatement ps = c.prepareStatement(hold)) {
            // the parked flag's parameter is in the select list, before the arrays of its FROM
            ps.setBoolean(1, parked);
            ps.setArray(2, c.createArrayOf("int8", ids));
            ps.setArray(3, c.createArrayOf("int2", rowLanes));
            ps.setArray(4, c.createArrayOf("varchar", destinations));
            ps.setArray(5, c.createArrayOf("varchar", keys));
            ps.executeUpdate();
        }
    }

    @Override
    public void unhold(Connection c, long[] ids) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(unhold)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            ps.executeUpdate();
        }
    }

    @Override
    public void deadLetter(Connection c, long[] ids, String[] reasons, int[] addAttempts) throws SQLException {
        if (ids.length == 0) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(deadLetter)) {
            ps.setArray(1, c.createArrayOf("int8", box(ids)));
            ps.setArray(2, c.createArrayOf("text", reasons));
            ps.setArray(3, c.createArrayOf("int4", box(addAttempts)));
            ps.executeUpdate();
        }
    }

    @Override
    public long[] backlog(Connection c, int timeoutSeconds) throws SQLException {
        return RelayStore.backlog(c, backlog, timeoutSeconds);
    }

    @Override
    public List<String> missingTables(Connection c, List<String> names, List<String> qualified) throws SQLException {
        List<String> missing = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(missingTables)) {
            ps.setArray(1, c.createArrayOf("text", names.toArray()));
            ps.setArray(2, c.createArrayOf("text", qualified.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    missing.add(rs.getString(1));
                }
            }
        }
        return missing;
    }

    @Override
    public boolean isUndefinedTable(Throwable e) {
        return MissingTables.isUndefinedTable(e);
    }

    private static Long[] box(long[] values) {
        Long[] boxed = new Long[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return boxed;
    }

    private static Integer[] box(int[] values) {
        Integer[] boxed = new Integer[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return boxed;
    }
}
