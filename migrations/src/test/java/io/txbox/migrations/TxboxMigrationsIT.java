package io.txbox.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** The same migrations, with the same outcomes, on PostgreSQL and on MariaDB. */
class TxboxMigrationsIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migrate_twice_secondRunIsNoOp(TestDatabase db) {
        TxboxTables tables = new TxboxTables(db.newSchema("twice"), "txbox_");
        var first = TxboxMigrations.migrate(db.dataSource(), tables);
        var second = TxboxMigrations.migrate(db.dataSource(), tables);
        assertThat(first.migrationsExecuted()).isPositive();
        assertThat(second.migrationsExecuted()).isZero();
        assertThat(second.schemaVersion()).isEqualTo(first.schemaVersion()).isEqualTo("6");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migrateToV3_existingEntries_keepTheirCountTowardDead(TestDatabase db) throws Exception {
        TxboxTables tables = new TxboxTables(db.newSchema("upgrade"), "txbox_");
        Flyway v2 = Flyway.configure().configuration(TxboxMigrations.flyway(db.dataSource(), tables).getConfiguration())
                .target("2").load();
        v2.migrate();
        String inbox = db.qualified(tables.schema(), tables.inboxTable());
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + inbox + " (consumer, message_key, status, attempts) values"
                    + " ('c', 'failed', 'FAILED', 4), ('c', 'dead', 'DEAD', 5), ('c', 'running', 'PROCESSING', 3),"
                    + " ('c', 'done', 'COMPLETED', 2)");
        }
        TxboxMigrations.migrate(db.dataSource(), tables);
        List<String> failures = new ArrayList<>();
        try (Connection c = db.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select message_key, failures from " + inbox + " order by message_key")) {
            while (rs.next()) {
                failures.add(rs.getString(1) + "=" + rs.getInt(2));
            }
        }
        assertThat(String.join(",", failures)).isEqualTo("dead=5,done=0,failed=4,running=2");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migrate_twoSchemasOfOneDatabase_areIndependent(TestDatabase db) throws Exception {
        TxboxTables a = new TxboxTables(db.newSchema("a"), "txbox_");
        TxboxTables b = new TxboxTables(db.newSchema("b"), "other_");
        TxboxMigrations.migrate(db.dataSource(), a);
        TxboxMigrations.migrate(db.dataSource(), b);
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + db.qualified(a.schema(), a.relayMemberTable()) + " values ('m', now())");
            assertThat(count(st, db.qualified(b.schema(), b.relayMemberTable()))).isZero();
            assertThat(count(st, db.qualified(a.schema(), a.relayMemberTable()))).isEqualTo(1);
            assertThat(count(st, db.qualified(b.schema(), b.historyTable()))).isPositive();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migrate_schemaHoldingApplicationTables_addsTxboxTablesBesideThem(TestDatabase db) throws Exception {
        String schema = db.newSchema("app");
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("create table " + schema + ".orders(id int primary key)");
        }
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        assertThat(TxboxMigrations.migrate(db.dataSource(), tables).migrationsExecuted()).isPositive();
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            assertThat(count(st, db.qualified(schema, tables.outboxTable()))).isZero();
            assertThat(count(st, schema + ".orders")).isZero();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void ownFlyway_withLocationAndPlaceholders_createsTheSameTables(TestDatabase db) throws Exception {
        String schema = db.newSchema("own");
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        Map<String, String> placeholders = new HashMap<>(TxboxMigrations.placeholders(db.dataSource(), tables));
        Flyway.configure().dataSource(db.dataSource()).schemas(schema).locations(TxboxMigrations.location(db.dataSource()))
                .placeholders(placeholders).load().migrate();
        try (Connection c = db.connection()) {
            assertThat(SchemaDrift.between(c, schema, "txbox_")).isEmpty();
            try (Statement st = c.createStatement()) {
                assertThat(count(st, schema + ".flyway_schema_history")).isPositive();
            }
        }
    }

    /** The form docs/getting-started.md shows: the txbox schema does not exist yet and is listed after the default one. */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void ownFlyway_missingSchemaListedAfterDefault_isCreatedByFlyway(TestDatabase db) throws Exception {
        String appSchema = db.newSchema("app");
        String schema = db.newSchema("own_missing");
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute((db.kind() == TestDatabase.Kind.POSTGRESQL ? "drop schema " : "drop database ") + schema);
        }
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        Flyway.configure().dataSource(db.dataSource()).schemas(appSchema, schema)
                .locations(TxboxMigrations.location(db.dataSource()))
                .placeholders(TxboxMigrations.placeholders(db.dataSource(), tables)).load().migrate();
        try (Connection c = db.connection()) {
            assertThat(SchemaDrift.between(c, schema, "txbox_")).isEmpty();
            try (Statement st = c.createStatement()) {
                assertThat(count(st, appSchema + ".flyway_schema_history")).isPositive();
            }
        }
    }

    @Test
    void location_postgresql_isTheDocumentedConstantWithItsPlaceholders() {
        var pg = DBS.postgres();
        TxboxTables tables = new TxboxTables(pg.schema(), "txbox_");
        assertThat(TxboxMigrations.location(pg.dataSource())).isEqualTo(TxboxMigrations.LOCATION);
        assertThat(TxboxMigrations.placeholders(pg.dataSource(), tables)).isEqualTo(TxboxMigrations.placeholders(tables));
        assertThat(TxboxMigrations.location(DBS.mariadb().dataSource())).isEqualTo(TxboxMigrations.MARIADB_LOCATION);
        assertThat(TxboxMigrations.placeholders(DBS.mariadb().dataSource(), tables))
                .containsEntry(TxboxMigrations.KEY_COLLATION_PLACEHOLDER, TxboxMigrations.MARIADB_KEY_COLLATION);
    }

    /** Keys compare byte for byte on both: case and trailing spaces make different keys. */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inboxKeys_differingInCaseOrTrailingSpace_areDifferentEntries(TestDatabase db) throws Exception {
        TxboxTables tables = new TxboxTables(db.newSchema("keys"), "txbox_");
        TxboxMigrations.migrate(db.dataSource(), tables);
        String inbox = db.qualified(tables.schema(), tables.inboxTable());
        String outbox = db.qualified(tables.schema(), tables.outboxTable());
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + inbox + " (consumer, message_key, status) values"
                    + " ('c', 'k', 'COMPLETED'), ('c', 'K', 'COMPLETED'), ('c', 'k ', 'COMPLETED'), ('c', 'ké', 'COMPLETED'),"
                    + " ('c', 'ke', 'COMPLETED')");
            st.execute("insert into " + outbox + " (step_key, original_key, destination, lane, payload) values"
                    + " ('s', 's', 'd', 0, 'p'), ('S', 's', 'd', 0, 'p'), ('s ', 's', 'd', 0, 'p')");
            assertThat(count(st, inbox)).isEqualTo(5);
            assertThat(count(st, outbox)).isEqualTo(3);
        }
    }

    /** The longest schema and prefix TxboxTables accepts fit every name under both databases' limits. */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migrate_longestSchemaAndPrefix_fitIdentifierLimits(TestDatabase db) throws Exception {
        String schema = db.newSchema("l".repeat(TxboxTables.MAX_SCHEMA_LENGTH - "t__12345678".length()));
        assertThat(schema).hasSize(TxboxTables.MAX_SCHEMA_LENGTH);
        TxboxTables tables = new TxboxTables(schema, "p".repeat(TxboxTables.MAX_PREFIX_LENGTH));
        TxboxMigrations.migrate(db.dataSource(), tables);
        try (Connection c = db.connection()) {
            assertThat(SchemaDrift.between(c, schema, tables.prefix())).isEmpty();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void tables_injectionAttemptInSchema_isRejectedBeforeAnySqlRuns(TestDatabase db) throws Exception {
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("create table victim(id int)");
        }
        assertThatThrownBy(() -> new TxboxTables("x\"; drop table victim; --", "txbox_"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema must match")
                .hasMessageContaining("drop table victim");
        assertThatThrownBy(() -> new TxboxTables("x`; drop table victim; --", "txbox_"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("schema must match");
        assertThatThrownBy(() -> new TxboxTables("public", "p; delete from x"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("table prefix");
        assertThatThrownBy(() -> new TxboxTables("Upper", "")).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> new TxboxTables("a".repeat(49), "")).isInstanceOf(ConfigException.class);
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            assertThat(count(st, "victim")).isZero();
        }
    }

    private static long count(Statement st, String table) throws Exception {
        try (ResultSet rs = st.executeQuery("select count(*) from " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
