package io.txbox.internal;

import io.txbox.TxboxTables;
import io.txbox.internal.schema.Txbox;
import io.txbox.internal.schema.tables.TxboxInbox;
import io.txbox.internal.schema.tables.TxboxOutbox;
import io.txbox.internal.schema.tables.TxboxOutboxDead;
import io.txbox.internal.schema.tables.TxboxOutboxKeyHold;
import io.txbox.internal.schema.tables.TxboxRelayLane;
import io.txbox.internal.schema.tables.TxboxRelayMember;
import java.sql.Connection;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.SQLDialect;
import io.txbox.internal.shaded.jooq.conf.MappedSchema;
import io.txbox.internal.shaded.jooq.conf.MappedTable;
import io.txbox.internal.shaded.jooq.conf.RenderMapping;
import io.txbox.internal.shaded.jooq.conf.RenderQuotedNames;
import io.txbox.internal.shaded.jooq.conf.Settings;
import io.txbox.internal.shaded.jooq.impl.DSL;

/**
 * jOOQ contexts that render the generated tables under the configured schema and prefix.
 * Internal: nothing here is part of the API.
 */
public final class Jooq {
    private static final String RELOCATED_PREFIX = "io.txbox.internal.shaded.jooq.";

    static {
        // The relocated jOOQ reads its switches under the relocated name, so this never touches
        // an application's own jOOQ; it keeps jOOQ's banner and tips out of the application's log.
        System.setProperty(RELOCATED_PREFIX + "no-logo", "true");
        System.setProperty(RELOCATED_PREFIX + "no-tips", "true");
    }

    private Jooq() {}

    /** Settings that map the codegen names ({@code txbox.txbox_*}) onto {@code tables}. */
    public static Settings settings(TxboxTables tables) {
        String genPrefix = "txbox_";
        MappedSchema schema = new MappedSchema()
                .withInput(Txbox.TXBOX.getName())
                .withOutput(tables.schema())
                .withTables(
                        map(TxboxInbox.TXBOX_INBOX.getName(), genPrefix, tables.prefix()),
                        map(TxboxOutbox.TXBOX_OUTBOX.getName(), genPrefix, tables.prefix()),
                        map(TxboxOutboxDead.TXBOX_OUTBOX_DEAD.getName(), genPrefix, tables.prefix()),
                        map(TxboxOutboxKeyHold.TXBOX_OUTBOX_KEY_HOLD.getName(), genPrefix, tables.prefix()),
                        map(TxboxRelayLane.TXBOX_RELAY_LANE.getName(), genPrefix, tables.prefix()),
                        map(TxboxRelayMember.TXBOX_RELAY_MEMBER.getName(), genPrefix, tables.prefix()));
        return new Settings()
                .withRenderMapping(new RenderMapping().withSchemata(schema))
                .withRenderQuotedNames(RenderQuotedNames.EXPLICIT_DEFAULT_QUOTED)
                .withExecuteLogging(false)
                .withRenderFormatted(false);
    }

    private static MappedTable map(String generated, String genPrefix, String prefix) {
        return new MappedTable().withInput(generated).withOutput(prefix + generated.substring(genPrefix.length()));
    }

    /** A context for rendering only (no connection). */
    public static DSLContext renderer(TxboxTables tables) {
        return DSL.using(SQLDialect.POSTGRES, settings(tables));
    }

    /**
     * A context that renders {@code dialect}'s SQL, for rendering only. The MariaDB / MySQL tables
     * ({@code io.txbox.internal.mariadb.schema}) carry the same names as the PostgreSQL ones, so
     * the same name mapping applies.
     */
    public static DSLContext renderer(TxboxTables tables, Dialect dialect) {
        return DSL.using(dialect.jooq(), settings(tables));
    }

    /** A context that runs on the caller's connection and never commits or closes it. */
    public static DSLContext on(Connection connection, Settings settings) {
        return DSL.using(connection, SQLDialect.POSTGRES, settings);
    }
}
