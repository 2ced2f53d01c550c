package io.txbox.testkit;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The set-up an integration test repeats, in one line: a schema of its own, migrated with the
 * txbox tables, and on request an effects table for the business writes, so a test reads as its
 * scenario.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final TestPostgres PG = TestPostgres.perClass();
 * static TxboxSchema db;
 *
 * @BeforeAll
 * static void setUp() {
 *     db = TxboxSchema.migrated(PG).withEffectsTable();
 *     // TxboxTables.inSchema(db.name()), db.effectsTable(), db.count(db.effectsTable()) ...
 * }
 * }</pre>
 *
 * <p>The migration is {@code TxboxMigrations.migrate(dataSource, TxboxTables.inSchema(name))},
 * found on the test's classpath ({@code txbox-migrations} comes with {@code txbox-outbox} and the
 * modules above it): the testkit does not depend on txbox itself, so that txbox's own modules
 * can test with it.
 */
public final class TxboxSchema {
    /** The effects table's name: {@value}. */
    public static final String EFFECTS = "effects";

    private final TestPostgres pg;
    private final String name;

    private TxboxSchema(TestPostgres pg, String name) {
        this.pg = pg;
        this.name = name;
    }

    /**
     * The test class's own schema ({@link TestPostgres#schema()}), migrated.
     *
     * @throws TestkitException if txbox-migrations is not on the classpath or the migration fails
     */
    public static TxboxSchema migrated(TestPostgres pg) {
        if (pg == null) {
            throw new TestkitException("pg must not be null: pass the class's TestPostgres extension");
        }
        return new TxboxSchema(pg, pg.schema()).migrate();
    }

    /**
     * A further fresh schema ({@link TestPostgres#newSchema(String)}, dropped with the class's),
     * migrated; for a test that needs tables no other test has touched.
     *
     * @throws TestkitException if txbox-migrations is not on the classpath or the migration fails
     */
    public static TxboxSchema migrated(TestPostgres pg, String hint) {
        if (pg == null) {
            throw new TestkitException("pg must not be null: pass the class's TestPostgres extension");
        }
        return new TxboxSchema(pg, pg.newSchema(hint)).migrate();
    }

    /**
     * Creates {@value #EFFECTS} ({@code consumer text not null, message_key text not null,
     * payload text}) in this schema, without a key, so a test can count how often an effect ran.
     */
    public TxboxSchema withEffectsTable() {
        return execute("create table if not exists " + effectsTable()
                + " (consumer text not null, message_key text not null, payload text)");
    }

    /** Runs {@code sql} (DDL or a write) on a pooled connection in auto-commit mode. */
    public TxboxSchema execute(String sql) {
        try (Connection c = pg.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new TestkitException("in schema " + name + ", " + sql + " failed: " + e.getMessage(), e);
        }
        return this;
    }

    /** The rows of {@code tableOrWhere} (a qualified table, optionally followed by a where clause). */
    public long count(String tableOrWhere) {
        String sql = "select count(*) from " + tableOrWhere;
        try (Connection c = pg.dataSource().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new TestkitException("in schema " + name + ", " + sql + " failed: " + e.getMessage(), e);
        }
    }

    /** The schema's name. */
    public String name() {
        return name;
    }

    /** The effects table, qualified and quoted: {@code "schema"."effects"}. */
    public String effectsTable() {
        return "\"" + name + "\"." + EFFECTS;
    }

    /** The pool of the class's database. */
    public DataSource dataSource() {
        return pg.dataSource();
    }

    private TxboxSchema migrate() {
        try {
            Class<?> tablesType = Class.forName("io.txbox.TxboxTables");
            Object tables = tablesType.getMethod("inSchema", String.class).invoke(null, name);
            Method migrate = Class.forName("io.txbox.migrations.TxboxMigrations")
                    .getMethod("migrate", DataSource.class, tablesType);
            migrate.invoke(null, pg.dataSource(), tables);
            return this;
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            throw new TestkitException("TxboxSchema.migrated needs io.txbox:txbox-migrations on the test classpath"
                    + " (it comes with txbox-outbox): " + e.getMessage(), e);
        } catch (InvocationTargetException e) {
            throw new TestkitException("migrating schema " + name + " failed: " + e.getCause().getMessage(), e.getCause());
        } catch (IllegalAccessException e) {
            throw new TestkitException("cannot call TxboxMigrations.migrate: " + e.getMessage(), e);
        }
    }
}
