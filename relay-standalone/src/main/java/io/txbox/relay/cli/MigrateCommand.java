package io.txbox.relay.cli;

import io.txbox.migrations.TxboxMigrations;
import io.txbox.migrations.TxboxMigrations.MigrationResult;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;

/** {@code migrate}: creates or upgrades the txbox tables in the configured schema. */
@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = {"Creates or upgrades the txbox tables (schema: txbox.schema; table prefix:"
                + " txbox.table-prefix).",
            "Uses txbox's own Flyway history table; running it again is a no-op."})
final class MigrateCommand extends AdminCommand {
    @Override
    boolean needsTables() {
        return false;
    }

    @Override
    public Integer call() {
        MigrationResult r = withAdmin(ctx -> TxboxMigrations.migrate(ctx.dataSource(), ctx.config().tables()));
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("schema", r.schema());
            m.put("migrationsExecuted", r.migrationsExecuted());
            m.put("schemaVersion", r.schemaVersion());
            printJson(m);
        } else {
            print("schema " + r.schema() + ": " + r.migrationsExecuted() + " migration(s) applied, now at version "
                    + r.schemaVersion());
        }
        return TxboxCli.OK;
    }
}
