package io.txbox.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.Statement;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * The generated jOOQ code must describe exactly what the migrations create, on PostgreSQL and on
 * MariaDB. Building with {@code -Djooq.codegen.skip=true} after editing the SQL makes this test
 * fail.
 */
class GeneratedSchemaDriftIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migratedSchema_matchesGeneratedCode_tablesColumnsTypesAndKeys(TestDatabase db) throws Exception {
        TxboxTables tables = new TxboxTables(db.schema(), "txbox_");
        TxboxMigrations.migrate(db.dataSource(), tables);
        try (Connection c = db.connection()) {
            assertThat(SchemaDrift.between(c, tables.schema(), tables.prefix())).isEmpty();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void driftCheck_columnAddedOutsideGeneratedCode_isReported(TestDatabase db) throws Exception {
        String schema = db.newSchema("drift");
        TxboxTables tables = new TxboxTables(schema, "d_");
        TxboxMigrations.migrate(db.dataSource(), tables);
        boolean pg = db.kind() == TestDatabase.Kind.POSTGRESQL;
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("alter table " + db.qualified(schema, tables.outboxTable()) + " add column extra text");
            st.execute("alter table " + db.qualified(schema, tables.inboxTable())
                    + (pg ? " alter column last_error type varchar(10)" : " modify last_error varchar(10)"));
            assertThat(SchemaDrift.between(c, schema, "d_"))
                    .anySatisfy(d -> assertThat(d).contains("d_outbox.extra").contains("not in the generated code"))
                    .anySatisfy(d -> assertThat(d).contains("d_inbox.last_error")
                            .contains(pg ? "character varying(10)" : "varchar(10)"));
        }
    }
}
