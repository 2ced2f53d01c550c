package io.txbox.migrations;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * The txbox schema: where its Flyway scripts live, and a one-call migration.
 *
 * <p>Teams with their own Flyway add {@link #LOCATION} to their locations and
 * {@link #placeholders(TxboxTables)} to their placeholders. Everyone else calls
 * {@link #migrate(DataSource)}, which keeps its own history table ({@code txbox_schema_history}
 * by default) in the txbox schema, so it never collides with the application's Flyway history.
 * Migrating an up-to-date schema is a no-op; several schemas in one database are independent.
 */
public final class TxboxMigrations {
    /** Classpath location of the PostgreSQL scripts: {@value}. */
    public static final String LOCATION = "classpath:io/txbox/migrations/postgresql";
    /** Placeholder carrying the schema name. */
    public static final String SCHEMA_PLACEHOLDER = "schema";
    /** Placeholder carrying the table prefix. */
    public static final String PREFIX_PLACEHOLDER = "prefix";

    private TxboxMigrations() {}

    /** Flyway placeholders for {@code tables}; the names were validated when {@code tables} was made. */
    public static Map<String, String> placeholders(TxboxTables tables) {
        Args.notNull(tables, "tables");
        return Map.of(SCHEMA_PLACEHOLDER, tables.schema(), PREFIX_PLACEHOLDER, tables.prefix());
    }

    /** Migrates the default tables ({@code public.txbox_*}). */
    public static MigrationResult migrate(DataSource dataSource) {
        Args.notNull(dataSource, "dataSource");
        return migrate(dataSource, TxboxTables.defaults());
    }

    /**
     * Creates or upgrades the txbox tables in {@code tables.schema()}, creating the schema if it
     * is missing. Safe to run concurrently from several processes: Flyway locks its history
     * table.
     *
     * @throws io.txbox.InvalidInputException if an argument is null
     * @throws TxboxException if a script fails; Flyway rolls the failing script back
     */
    public static MigrationResult migrate(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        try {
            MigrateResult result = flyway(dataSource, tables).migrate();
            return new MigrationResult(tables.schema(), result.migrationsExecuted,
                    result.targetSchemaVersion == null ? result.initialSchemaVersion : result.targetSchemaVersion);
        } catch (FlywayException e) {
            throw new TxboxException("txbox migration of schema " + tables.schema() + " failed: " + e.getMessage(), e);
        }
    }

    /** The Flyway configuration {@link #migrate} uses, for {@code info()} or {@code validate()}. */
    public static Flyway flyway(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        return Flyway.configure()
                .dataSource(dataSource)
                .locations(LOCATION)
                .schemas(tables.schema())
                .createSchemas(true)
                .table(tables.historyTable())
                .placeholders(placeholders(tables))
                // a shared schema may already hold the application's tables
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .loggers("slf4j")
                .load();
    }

    /**
     * What a migration did.
     *
     * @param schema the schema migrated
     * @param migrationsExecuted scripts applied by this call; 0 when already up to date
     * @param schemaVersion the version the schema is at now
     */
    public record MigrationResult(String schema, int migrationsExecuted, String schemaVersion) {}
}
