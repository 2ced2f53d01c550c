package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.inbox.Inbox;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/** {@code txbox.migrations}: each mode starts a whole application on a schema of its own. */
class MigrationsModeIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void txboxMode_createsTheTablesWithTxboxHistoryTable(TestDatabase db) {
        String schema = db.newSchema("mode_txbox");
        try (ConfigurableApplicationContext app = start(db, schema, "txbox.migrations=txbox")) {
            assertThat(tables(db, schema)).contains("txbox_inbox", "txbox_outbox", "txbox_schema_history")
                    .doesNotContain("flyway_schema_history");
            // every versioned script from V1 on, whatever the latest is
            assertThat(admin(db).queryForObject("SELECT count(*) = max(cast(version AS integer)) AND count(*) > 0 FROM "
                    + db.qualified(schema, "txbox_schema_history") + " WHERE script LIKE 'V%' AND success",
                    Boolean.class)).isTrue();
            assertThat(app.getBean(Inbox.class).consumer()).isEqualTo(TxboxProperties.DEFAULT_CONSUMER);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void defaultMode_isTxbox(TestDatabase db) {
        String schema = db.newSchema("mode_default");
        try (ConfigurableApplicationContext app = start(db, schema)) {
            assertThat(tables(db, schema)).contains("txbox_inbox", "txbox_schema_history");
        }
    }

    // PostgreSQL only: Boot's Flyway needs flyway-mysql for MariaDB, which these tests do not have;
    // TxboxFlywayCustomizerIT checks what the customizer gives Flyway on each database
    @Test
    void flywayMode_putsTheScriptsInBootsFlywayHistory() {
        TestDatabase db = DBS.postgres();
        String schema = db.newSchema("mode_flyway");
        try (ConfigurableApplicationContext app = start(db, schema, "txbox.migrations=flyway",
                "spring.flyway.enabled=true", "txbox.prefix=tb_")) {
            assertThat(tables(db, schema)).contains("tb_inbox", "tb_outbox", "flyway_schema_history")
                    .doesNotContain("tb_schema_history", "txbox_inbox");
            assertThat(admin(db).queryForList("SELECT script FROM " + db.qualified(schema, "flyway_schema_history")
                    + " WHERE success ORDER BY installed_rank", String.class))
                    .contains("V1__txbox_tables.sql", "V2__inbox_received_txid.sql", "V3__inbox_failures.sql");
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void noneMode_createsNothing(TestDatabase db) {
        String schema = db.newSchema("mode_none");
        try (ConfigurableApplicationContext app = start(db, schema, "txbox.migrations=none")) {
            assertThat(tables(db, schema)).doesNotContain("txbox_inbox", "txbox_outbox", "txbox_schema_history",
                    "flyway_schema_history");
            assertThat(app.getBean(Inbox.class)).isNotNull();
        }
    }

    static ConfigurableApplicationContext start(TestDatabase db, String schema, String... more) {
        return new SpringApplicationBuilder(TestApplication.class)
                .properties(TestDatabaseProperties.properties(db, schema))
                // Boot's Flyway only where a test turns it on; later properties win
                .properties("spring.flyway.enabled=false")
                .properties(more)
                .run();
    }

    private static List<String> tables(TestDatabase db, String schema) {
        return admin(db).queryForList("SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                String.class, schema);
    }

    private static JdbcTemplate admin(TestDatabase db) {
        return new JdbcTemplate(db.dataSource());
    }
}
