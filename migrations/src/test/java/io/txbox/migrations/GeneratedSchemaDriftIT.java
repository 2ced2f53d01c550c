package io.txbox.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The generated jOOQ code must describe exactly what the migrations create. Building with
 * {@code -Djooq.codegen.skip=true} after editing the SQL makes this test fail.
 */
class GeneratedSchemaDriftIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @Test
    void migratedSchema_matchesGeneratedCode_tablesColumnsTypesAndKeys() throws Exception {
        TxboxTables tables = new TxboxTables(PG.schema(), "txbox_");
        TxboxMigrations.migrate(PG.dataSource(), tables);
        try (Connection c = PG.connection()) {
            assertThat(SchemaDrift.between(c, tables.schema(), tables.prefix())).isEmpty();
        }
    }

    @Test
    void driftCheck_columnAddedOutsideGeneratedCode_isReported() throws Exception {
        String schema = PG.newSchema("drift");
        TxboxTables tables = new TxboxTables(schema, "d_");
        TxboxMigrations.migrate(PG.dataSource(), tables);
        try (Connection c = PG.connection(); Statement st = c.createStatement()) {
            st.execute("alter table " + tables.qualified(tables.outboxTable()) + " add column extra text");
            st.execute("alter table " + tables.qualified(tables.inboxTable()) + " alter column last_error type varchar(10)");
            assertThat(SchemaDrift.between(c, schema, "d_"))
                    .anySatisfy(d -> assertThat(d).contains("d_outbox.extra").contains("not in the generated code"))
                    .anySatisfy(d -> assertThat(d).contains("d_inbox.last_error").contains("character varying(10)"));
        }
    }
}
