package io.txbox.relay.internal;

import static io.txbox.internal.schema.tables.TxboxOutbox.TXBOX_OUTBOX;
import static io.txbox.internal.schema.tables.TxboxOutboxDead.TXBOX_OUTBOX_DEAD;
import static io.txbox.internal.schema.tables.TxboxRelayLane.TXBOX_RELAY_LANE;
import static io.txbox.internal.schema.tables.TxboxRelayMember.TXBOX_RELAY_MEMBER;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Record;
import io.txbox.internal.shaded.jooq.conf.Settings;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.relay.RelayAdmin;
import java.sql.Connection;
import java.time.Duration;
import java.time.OffsetDateTime;

/**
 * The read-only statements behind {@code RelayAdmin.status()}: outbox backlog, dead letters,
 * live relay members and owned lanes, all measured by the database clock. jOOQ DSL on the
 * generated tables, mapped to the configured schema and prefix.
 */
public final class StatusQueries {
    private final Settings settings;

    public StatusQueries(TxboxTables tables) {
        this.settings = Jooq.settings(tables);
    }

    /** The figures, as read in the caller's transaction on {@code c}. */
    public RelayAdmin.Status read(Connection c) {
        DSLContext db = Jooq.on(c, settings);
        Field<OffsetDateTime> now = DSL.currentOffsetDateTime();
        Record outbox = db.select(DSL.count(),
                        DSL.count().filterWhere(TXBOX_OUTBOX.AVAILABLE_AT.le(now)),
                        DSL.min(TXBOX_OUTBOX.CREATED_AT), now)
                .from(TXBOX_OUTBOX).fetchSingle();
        Record dead = db.select(DSL.count(), DSL.min(TXBOX_OUTBOX_DEAD.DEAD_AT)).from(TXBOX_OUTBOX_DEAD).fetchSingle();
        int members = db.fetchCount(TXBOX_RELAY_MEMBER, TXBOX_RELAY_MEMBER.LEASE_UNTIL.gt(now));
        int lanes = db.fetchCount(TXBOX_RELAY_LANE, TXBOX_RELAY_LANE.OWNER.isNotNull()
                .and(TXBOX_RELAY_LANE.LEASE_UNTIL.gt(now)));
        OffsetDateTime oldest = outbox.get(2, OffsetDateTime.class);
        OffsetDateTime dbNow = outbox.get(3, OffsetDateTime.class);
        OffsetDateTime oldestDead = dead.get(1, OffsetDateTime.class);
        return new RelayAdmin.Status(outbox.get(0, Long.class), outbox.get(1, Long.class),
                oldest == null ? null : Duration.between(oldest, dbNow), dead.get(0, Long.class),
                oldestDead == null ? null : oldestDead.toInstant(), members, lanes);
    }
}
