package io.txbox.saga;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * One service's database: its own schema, its own pool and its own txbox tables. Services share
 * the database server (PostgreSQL, or MariaDB, where a schema is a database) and nothing else;
 * they never read each other's schemas.
 */
public final class ServiceDb implements AutoCloseable {
    private final String schema;
    private final HikariDataSource pool;
    private final TxboxTables tables;

    private ServiceDb(String schema, HikariDataSource pool) {
        this.schema = schema;
        this.pool = pool;
        this.tables = TxboxTables.inSchema(schema);
    }

    /**
     * Drops {@code schema} if it exists, has the txbox migration create it afresh with the txbox
     * tables, and runs {@code ddl}, so every run starts empty.
     */
    public static ServiceDb create(SagaSettings settings, String schema, int poolSize, String... ddl) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("saga-" + schema);
        config.setJdbcUrl(settings.jdbcUrl());
        config.setUsername(settings.jdbcUser());
        config.setPassword(settings.jdbcPassword());
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(1);
        config.setConnectionTimeout(10_000);
        HikariDataSource pool = new HikariDataSource(config);
        ServiceDb db = new ServiceDb(schema, pool);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute(settings.mariadb() ? "DROP DATABASE IF EXISTS " + schema : "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        } catch (SQLException e) {
            pool.close();
            throw new SagaException("cannot drop schema " + schema + ": " + e.getMessage(), e);
        }
        TxboxMigrations.migrate(pool, db.tables);
        db.execute(ddl(settings, DeliveryLog.ddl(schema)));
        db.execute(ddl(settings, ddl));
        return db;
    }

    /**
     * The services' DDL, written for PostgreSQL, in MariaDB's types when the run is on MariaDB:
     * identity columns, indexable strings, microsecond timestamps.
     */
    static String[] ddl(SagaSettings settings, String... statements) {
        if (!settings.mariadb()) {
            return statements;
        }
        String[] out = new String[statements.length];
        for (int i = 0; i < statements.length; i++) {
            out[i] = statements[i].replace("bigserial PRIMARY KEY", "bigint AUTO_INCREMENT PRIMARY KEY")
                    .replace(" text ", " varchar(255) ").replace(" text,", " varchar(255),").replace(" text)", " varchar(255))")
                    .replace("timestamptz NOT NULL DEFAULT clock_timestamp()", "timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)")
                    .replace("timestamptz", "timestamp(6) NULL");
        }
        return out;
    }

    /** Runs each statement in auto-commit mode. */
    public void execute(String... statements) {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            for (String sql : statements) {
                s.execute(sql);
            }
        } catch (SQLException e) {
            throw new SagaException("schema " + schema + ": " + e.getMessage(), e);
        }
    }

    public String schema() {
        return schema;
    }

    public DataSource dataSource() {
        return pool;
    }

    public TxboxTables tables() {
        return tables;
    }

    /** {@code schema.table}; both parts are fixed identifiers of this program. */
    public String table(String name) {
        return schema + "." + name;
    }

    @Override
    public void close() {
        pool.close();
    }
}
