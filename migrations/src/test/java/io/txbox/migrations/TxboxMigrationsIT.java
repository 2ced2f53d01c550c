package io.txbox.migrations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class TxboxMigrationsIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @Test
    void migrate_twice_secondRunIsNoOp() {
        TxboxTables tables = new TxboxTables(PG.newSchema("twice"), "txbox_");
        var first = TxboxMigrations.migrate(PG.dataSource(), tables);
        var second = TxboxMigrations.migrate(PG.dataSource(), tables);
        assertThat(first.migrationsExecuted()).isPositive();
        assertThat(second.migrationsExecuted()).isZero();
        assertThat(second.schemaVersion()).isEqualTo(first.schemaVersion());
    }

    @Test
    void migrateToV3_existingEntries_keepTheirCountTowardDead() throws Exception {
        TxboxTables tables = new TxboxTables(PG.newSchema("upgrade"), "txbox_");
        Flyway v2 = Flyway.configure().configuration(TxboxMigrations.flyway(PG.dataSource(), tables).getConfiguration())
                .target("2").load();
        v2.migrate();
        String inbox = tables.qualified(tables.inboxTable());
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + inbox + " (consumer, message_key, status, attempts) values"
                    + " ('c', 'failed', 'FAILED', 4), ('c', 'dead', 'DEAD', 5), ('c', 'running', 'PROCESSING', 3),"
                    + " ('c', 'done', 'COMPLETED', 2)");
        }
        TxboxMigrations.migrate(PG.dataSource(), tables);
        try (Connection c = PG.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select string_agg(message_key || '=' || failures, ',' order by message_key)"
                        + " from " + inbox)) {
            rs.next();
            assertThat(rs.getString(1)).isEqualTo("dead=5,done=0,failed=4,running=2");
        }
    }

    @Test
    void migrate_twoSchemasOfOneDatabase_areIndependent() throws Exception {
        TxboxTables a = new TxboxTables(PG.newSchema("a"), "txbox_");
        TxboxTables b = new TxboxTables(PG.newSchema("b"), "other_");
        TxboxMigrations.migrate(PG.dataSource(), a);
        TxboxMigrations.migrate(PG.dataSource(), b);
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            st.execute("insert into " + a.qualified(a.relayMemberTable()) + " values ('m', now())");
            assertThat(count(st, b.qualified(b.relayMemberTable()))).isZero();
            assertThat(count(st, a.qualified(a.relayMemberTable()))).isEqualTo(1);
            assertThat(count(st, b.qualified(b.historyTable()))).isPositive();
        }
    }

    @Test
    void migrate_schemaHoldingApplicationTables_addsTxboxTablesBesideThem() throws Exception {
        String schema = PG.newSchema("app");
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            st.execute("create table " + schema + ".orders(id int primary key)");
        }
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        assertThat(TxboxMigrations.migrate(PG.dataSource(), tables).migrationsExecuted()).isPositive();
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            assertThat(count(st, tables.qualified(tables.outboxTable()))).isZero();
            assertThat(count(st, schema + ".orders")).isZero();
        }
    }

    @Test
    void ownFlyway_withLocationAndPlaceholders_createsTheSameTables() throws Exception {
        String schema = PG.newSchema("own");
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        Map<String, String> placeholders = new HashMap<>(TxboxMigrations.placeholders(tables));
        Flyway.configure().dataSource(PG.dataSource()).schemas(schema).locations(TxboxMigrations.LOCATION)
                .placeholders(placeholders).load().migrate();
        try (Connection c = PG.connection()) {
            assertThat(SchemaDrift.between(c, schema, "txbox_")).isEmpty();
            try (Statement st = c.createStatement()) {
                assertThat(count(st, schema + ".flyway_schema_history")).isPositive();
            }
        }
    }

    /** The README's form: the txbox schema does not exist yet and is listed after the default one. */
    @Test
    void ownFlyway_missingSchemaListedAfterDefault_isCreatedByFlyway() throws Exception {
        String appSchema = PG.newSchema("app");
        String schema = PG.newSchema("own_missing");
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            st.execute("drop schema " + schema);
        }
        TxboxTables tables = new TxboxTables(schema, "txbox_");
        Flyway.configure().dataSource(PG.dataSource()).schemas(appSchema, schema).locations(TxboxMigrations.LOCATION)
                .placeholders(TxboxMigrations.placeholders(tables)).load().migrate();
        try (Connection c = PG.connection()) {
            assertThat(SchemaDrift.between(c, schema, "txbox_")).isEmpty();
            try (Statement st = c.createStatement()) {
                assertThat(count(st, appSchema + ".flyway_schema_history")).isPositive();
            }
        }
    }

    @Test
    void tables_injectionAttemptInSchema_isRejectedBeforeAnySqlRuns() throws Exception {
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            st.execute("create table victim(id int)");
        }
        assertThatThrownBy(() -> new TxboxTables("x\"; drop table victim; --", "txbox_"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema must match")
                .hasMessageContaining("drop table victim");
        assertThatThrownBy(() -> new TxboxTables("public", "p; delete from x"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("table prefix");
        assertThatThrownBy(() -> new TxboxTables("Upper", "")).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> new TxboxTables("a".repeat(49), "")).isInstanceOf(ConfigException.class);
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
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
