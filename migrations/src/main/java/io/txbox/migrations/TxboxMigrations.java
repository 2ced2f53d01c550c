package io.txbox.migrations;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.Dialect;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * The txbox schema: where its Flyway scripts live, and a one-call migration.
 *
 * <p>txbox runs on PostgreSQL, MariaDB 10.6+ and MySQL 8.0+. Each family has its own scripts
 * with the same tables, columns, keys and indexes: {@link #LOCATION} for PostgreSQL, {@link
 * #MARIADB_LOCATION} for MariaDB and MySQL. On MariaDB and MySQL a schema is a database.
 *
 * <p>Teams with their own Flyway add the location to their locations and the placeholders to
 * their placeholders: {@link #placeholders(TxboxTables)} on PostgreSQL, {@link
 * #placeholders(DataSource, TxboxTables)} on any of them. Everyone else calls {@link
 * #migrate(DataSource)}, which finds out which database it is talking to, keeps its own history
 * table ({@code txbox_schema_history} by default) in the txbox schema, so it never collides with
 * the application's Flyway history. Migrating an up-to-date schema is a no-op; several schemas
 * in one database (databases on one MariaDB server) are independent.
 */
public final class TxboxMigrations {
    /** Classpath location of the PostgreSQL scripts: {@value}. */
    public static final String LOCATION = "classpath:io/txbox/migrations/postgresql";
    /** Classpath location of the MariaDB and MySQL scripts: {@value}. */
    public static final String MARIADB_LOCATION = "classpath:io/txbox/migrations/mariadb";
    /** Placeholder carrying the schema name (on MariaDB and MySQL: the database name). */
    public static final String SCHEMA_PLACEHOLDER = "schema";
    /** Placeholder carrying the table prefix. */
    public static final String PREFIX_PLACEHOLDER = "prefix";
    /**
     * Placeholder of the MariaDB / MySQL scripts carrying the binary, no-pad collation of the
     * txbox tables, so keys compare byte for byte: {@value #MARIADB_KEY_COLLATION} on MariaDB,
     * {@value #MYSQL_KEY_COLLATION} on MySQL.
     */
    public static final String KEY_COLLATION_PLACEHOLDER = "keyCollation";
    /** The key collation on MariaDB: {@value}. */
    public static final String MARIADB_KEY_COLLATION = "utf8mb4_nopad_bin";
    /** The key collation on MySQL: {@value}. */
    public static final String MYSQL_KEY_COLLATION = "utf8mb4_0900_bin";

    private TxboxMigrations() {}

    /**
     * Flyway placeholders of the PostgreSQL scripts for {@code tables}; the names were validated
     * when {@code tables} was made.
     */
    public static Map<String, String> placeholders(TxboxTables tables) {
        Args.notNull(tables, "tables");
        return Map.of(SCHEMA_PLACEHOLDER, tables.schema(), PREFIX_PLACEHOLDER, tables.prefix());
    }

    /**
     * Flyway placeholders of the scripts for the database {@code dataSource} connects to. Opens
     * one connection to find out which database it is.
     *
     * @throws io.txbox.ConfigException if the database is not PostgreSQL, MariaDB 10.6+ or MySQL
     *     8.0+; the message names the database and version found
     */
    public static Map<String, String> placeholders(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        return placeholders(Dialect.of(dataSource), tables);
    }

    /**
     * The location of the scripts for the database {@code dataSource} connects to: {@link
     * #LOCATION} or {@link #MARIADB_LOCATION}. Opens one connection to find out.
     *
     * @throws io.txbox.ConfigException if the database is not PostgreSQL, MariaDB 10.6+ or MySQL
     *     8.0+; the message names the database and version found
     */
    public static String location(DataSource dataSource) {
        Args.notNull(dataSource, "dataSource");
        return location(Dialect.of(dataSource));
    }

    /** Migrates the default tables ({@code public.txbox_*}). */
    public static MigrationResult migrate(DataSource dataSource) {
        Args.notNull(dataSource, "dataSource");
        return migrate(dataSource, TxboxTables.defaults());
    }

    /**
     * Creates or upgrades the txbox tables in {@code tables.schema()}, creating the schema (on
     * MariaDB and MySQL: the database) if it is missing. Safe to run concurrently from several
     * processes: Flyway locks its history table.
     *
     * <p>On PostgreSQL a failing script is rolled back. MariaDB and MySQL commit every DDL
     * statement at once, so a script that fails there can leave part of itself applied; Flyway
     * then records the failure and refuses to go on until it is repaired.
     *
     * @throws io.txbox.InvalidInputException if an argument is null
     * @throws io.txbox.ConfigException if the database is not PostgreSQL, MariaDB 10.6+ or MySQL
     *     8.0+; the message names the database and version found and the version needed
     * @throws TxboxException if a script fails
     */
    public static MigrationResult migrate(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        Flyway flyway = flyway(dataSource, tables);
        try {
            MigrateResult result = flyway.migrate();
            return new MigrationResult(tables.schema(), result.migrationsExecuted,
                    result.targetSchemaVersion == null ? result.initialSchemaVersion : result.targetSchemaVersion);
        } catch (FlywayException e) {
            throw new TxboxException("txbox migration of schema " + tables.schema() + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * The Flyway configuration {@link #migrate} uses, for {@code info()} or {@code validate()}.
     * Opens one connection to find out which database {@code dataSource} connects to.
     *
     * @throws io.txbox.ConfigException if the database is not PostgreSQL, MariaDB 10.6+ or MySQL
     *     8.0+
     */
    public static Flyway flyway(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        Dialect dialect = Dialect.of(dataSource);
        return Flyway.configure()
                .dataSource(dataSource)
                .locations(location(dialect))
                .schemas(tables.schema())
                .createSchemas(true)
                .table(tables.historyTable())
                .placeholders(placeholders(dialect, tables))
                // a shared schema may already hold the application's tables
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .loggers("slf4j")
                .load();
    }

    private static String location(Dialect dialect) {
        return dialect == Dialect.POSTGRESQL ? LOCATION : MARIADB_LOCATION;
    }

    private static Map<String, String> placeholders(Dialect dialect, TxboxTables tables) {
        return switch (dialect) {
            case POSTGRESQL -> placeholders(tables);
            case MARIADB, MYSQL -> Map.of(SCHEMA_PLACEHOLDER, tables.schema(), PREFIX_PLACEHOLDER, tables.prefix(),
                    KEY_COLLATION_PLACEHOLDER, dialect == Dialect.MARIADB ? MARIADB_KEY_COLLATION : MYSQL_KEY_COLLATION);
        };
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
