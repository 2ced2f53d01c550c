package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import io.txbox.internal.MissingTables;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Whether the txbox tables exist, so that an unmigrated schema reads as one clear instruction
 * (readiness, the admin commands, the workers' log) instead of {@code relation ... does not exist}.
 */
public final class SchemaCheck {
    private SchemaCheck() {}

    /**
     * Returns null when every txbox table exists in {@code tables}' schema, otherwise what to do
     * about it. Runs one query on {@code c}, in whatever transaction it is in.
     */
    public static @Nullable String problem(Connection c, TxboxTables tables) throws SQLException {
        return problem(RelayStore.of(tables, Dialect.of(c)), c, tables);
    }

    /** {@link #problem(Connection, TxboxTables)} through a relay's own store. */
    static @Nullable String problem(RelayStore store, Connection c, TxboxTables tables) throws SQLException {
        List<String> all = tables(tables);
        List<String> missing = store.missingTables(c, all, all.stream().map(tables::qualified).toList());
        if (missing.isEmpty()) {
            return null;
        }
        return missing.size() == all.size() ? message(tables)
                : "schema " + tables.schema() + " lacks the txbox tables " + missing + ": run `txbox-relay migrate`"
                        + " (or TxboxMigrations.migrate) to bring it up to date";
    }

    private static List<String> tables(TxboxTables tables) {
        return List.of(tables.outboxTable(), tables.outboxDeadTable(), tables.inboxTable(), tables.relayLaneTable(),
                tables.relayMemberTable(), tables.outboxKeyHoldTable());
    }

    /** The instruction for a schema without txbox tables. */
    public static String message(TxboxTables tables) {
        return MissingTables.message(tables);
    }
}
