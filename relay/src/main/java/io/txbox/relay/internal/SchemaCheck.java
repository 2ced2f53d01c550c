package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
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
        List<String> all = List.of(tables.outboxTable(), tables.outboxDeadTable(), tables.inboxTable(),
                tables.relayLaneTable(), tables.relayMemberTable());
        List<String> missing = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT n FROM unnest(?::text[], ?::text[]) AS t(n, q) WHERE to_regclass(q) IS NULL ORDER BY n")) {
            ps.setArray(1, c.createArrayOf("text", all.toArray()));
            ps.setArray(2, c.createArrayOf("text", all.stream().map(tables::qualified).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    missing.add(rs.getString(1));
                }
            }
        }
        if (missing.isEmpty()) {
            return null;
        }
        return missing.size() == all.size() ? message(tables)
                : "schema " + tables.schema() + " lacks the txbox tables " + missing + ": run `txbox-relay migrate`"
                        + " (or TxboxMigrations.migrate) to bring it up to date";
    }

    /** The instruction for a schema without txbox tables. */
    public static String message(TxboxTables tables) {
        return "schema " + tables.schema() + " has no txbox tables: run `txbox-relay migrate`"
                + " (or TxboxMigrations.migrate) first";
    }
}
