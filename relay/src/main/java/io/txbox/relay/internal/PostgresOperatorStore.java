package io.txbox.relay.internal;

import static io.txbox.internal.PostgresSql.nowPlusMillis;
import static io.txbox.internal.PostgresSql.param;
import static io.txbox.internal.PostgresSql.sql;
import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.schema.tables.TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD;
import static io.txbox.internal.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.OutboxColumns;
import io.txbox.internal.schema.tables.TxboxOutbox;
import io.txbox.internal.schema.tables.TxboxOutboxDead;
import io.txbox.internal.schema.tables.TxboxRelayLane;
import io.txbox.internal.schema.tables.TxboxRelayMember;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import io.txbox.relay.DeadLetters;
import io.txbox.relay.RelayAdmin;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The operators' statements on PostgreSQL, built with jOOQ's DSL from the generated tables and
 * rendered once, when built. The move back to the outbox is a string around the generated names
 * and says why where it is written.
 */
final class PostgresOperatorStore implements OperatorStore {
    private static final TxboxOutbox O = TXBOX_OUTBOX;
    private static final TxboxOutboxDead D = TXBOX_OUTBOX_DEAD;
    private static final TxboxRelayLane L = TXBOX_RELAY_LANE;
    private static final TxboxRelayMember M = TXBOX_RELAY_MEMBER;
    private static final Field<OffsetDateTime> NOW = DSL.currentOffsetDateTime();

    private final String statusOutbox;
    private final String statusDead;
    private final String statusMembers;
    private final String statusLanes;
    private final String list;
    private final String retryOne;
    private final String retryFrom;
    private final String purge;
    private final String countOlder;
    private final String count;
    private final ParkedKeys parked;

    PostgresOperatorStore(TxboxTables tables) {
        DSLContext r = Jooq.renderer(tables);
        parked = new ParkedKeys(r.render(TXBOX_OUTBOX_KEY_HOLD), r.render(O), r.render(D), "%s", "now()",
                (rs, i) -> rs.getObject(i, OffsetDateTime.class).toInstant());
        statusOutbox = sql(r.select(DSL.count(), DSL.count().filterWhere(O.AVAILABLE_AT.le(NOW)), DSL.min(O.CREATED_AT), NOW)
                .from(O));
        statusDead = sql(r.select(DSL.count(), DSL.min(D.DEAD_AT)).from(D));
        statusMembers = sql(r.selectCount().from(M).where(M.LEASE_UNTIL.gt(NOW)));
        statusLanes = sql(r.selectCount().from(L).where(L.OWNER.isNotNull()).and(L.LEASE_UNTIL.gt(NOW)));

        list = sql(r.select(D.ID, D.STEP_KEY, D.DESTINATION, D.ROUTING_KEY, D.ATTEMPTS, D.REASON, D.CREATED_AT, D.DEAD_AT,
                        DSL.when(DSL.condition(param(SQLDataType.BOOLEAN)), D.PAYLOAD))
                .from(D)
                .where(param(SQLDataType.VARCHAR).isNull().or(D.DESTINATION.eq(param(SQLDataType.VARCHAR))))
                .orderBy(D.DEAD_AT.desc(), D.ID.desc())
                .limit(param(SQLDataType.INTEGER)));
        retryOne = move(r, "id = ?");
        retryFrom = move(r, "id > ? AND (cast(? as text) IS NULL OR destination = ?)");
        Condition older = D.DEAD_AT.lt(nowPlusMillis(param(SQLDataType.BIGINT).neg()));
        purge = sql(r.deleteFrom(D).where(D.ID.in(r.select(D.ID).from(D).where(older).orderBy(D.ID)
                .limit(DSL.inline(DeadLetters.BATCH)).forUpdate().skipLocked())));
        countOlder = sql(r.selectCount().from(D).where(older));
        count = sql(r.selectCount().from(D));
    }

    /**
     * Moves a batch of dead letters picked by {@code where} back to the outbox, in one statement:
     * how many it took, how many it requeued and the highest id taken. A string around the
     * generated names, not jOOQ's DSL: the outbox id is {@code GENERATED ALWAYS}, so keeping it
     * needs {@code OVERRIDING SYSTEM VALUE}, which jOOQ 3.19 cannot render. ON CONFLICT without a
     * target: a step key (or id) pending again is dropped, not duplicated.
     */
    private static String move(DSLContext r, String where) {
        String outbox = r.render(O);
        String dead = r.render(D);
        String cols = OutboxColumns.ROW.stream().map(f -> r.render(f.getUnqualifiedName())).collect(Collectors.joining(", "));
        return "WITH picked AS (SELECT id FROM " + dead + " WHERE " + where + " ORDER BY id LIMIT " + DeadLetters.BATCH
                + " FOR UPDATE SKIP LOCKED),"
                + " gone AS (DELETE FROM " + dead + " d USING picked p WHERE d.id = p.id RETURNING d.*),"
                + " moved AS (INSERT INTO " + outbox + " (" + cols + ", available_at, attempts, last_error)"
                + " OVERRIDING SYSTEM VALUE SELECT " + cols + ", now(), 0, 'retried from dead letters: ' || reason"
                + " FROM gone ORDER BY id ON CONFLICT DO NOTHING RETURNING 1)"
                + " SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM moved), (SELECT coalesce(max(id), 0) FROM gone)";
    }

    @Override
    public ParkedKeys parkedKeys() {
        return parked;
    }

    @Override
    public RelayAdmin.Status status(Connection c) throws SQLException {
        return OperatorStore.status(c, statusOutbox, statusDead, statusMembers, statusLanes, PostgresOperatorStore::oldestAge,
                PostgresOperatorStore::oldestDead);
    }

    /** The age of the oldest outbox row: from its creation to the server's now. */
    private static @Nullable Duration oldestAge(ResultSet rs) throws SQLException {
        OffsetDateTime oldest = rs.getObject(3, OffsetDateTime.class);
        return oldest == null ? null : Duration.between(oldest, rs.getObject(4, OffsetDateTime.class));
    }

    private static @Nullable Instant oldestDead(ResultSet rs) throws SQLException {
        OffsetDateTime oldestDead = rs.getObject(2, OffsetDateTime.class);
        return oldestDead == null ? null : oldestDead.toInstant();
    }

    @Override
    public List<DeadLetters.DeadLetter> listDead(Connection c, int limit, @Nullable String destination, boolean withPayload)
            throws SQLException {
        return OperatorStore.listDead(c, list, limit, destination, withPayload,
                (rs, i) -> rs.getObject(i, OffsetDateTime.class).toInstant());
    }

    @Override
    public Moved retryDead(Connection c, long id) throws SQLException {
        return OperatorStore.retryOne(c, retryOne, id, this::moved);
    }

    @Override
    public Moved retryDeadAfter(Connection c, long afterId, @Nullable String destination) throws SQLException {
        return OperatorStore.retryAfter(c, retryFrom, afterId, destination, this::moved);
    }

    private Moved moved(Connection c, PreparedStatement ps) throws SQLException {
        Moved m;
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            m = new Moved(rs.getInt(1), rs.getInt(2), rs.getLong(3));
        }
        if (m.requeued() > 0) {
            parked.unparkRequeued(c);
        }
        return m;
    }

    @Override
    public int purgeDead(Connection c, long ageMillis) throws SQLException {
        return OperatorStore.purge(c, purge, ageMillis, parked);
    }

    @Override
    public long countDeadOlder(Connection c, long ageMillis) throws SQLException {
        return OperatorStore.single(c, countOlder, ageMillis);
    }

    @Override
    public long countDead(Connection c) throws SQLException {
        return OperatorStore.single(c, count);
    }
}
