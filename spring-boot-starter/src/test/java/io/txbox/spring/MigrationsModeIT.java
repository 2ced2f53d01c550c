package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.inbox.Inbox;
import io.txbox.testkit.TestPostgres;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/** {@code txbox.migrations}: each mode starts a whole application on a schema of its own. */
class MigrationsModeIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @Test
    void txboxMode_createsTheTablesWithTxboxHistoryTable() {
        String schema = PG.newSchema("mode_txbox");
        try (ConfigurableApplicationContext app = start(schema, "txbox.migrations=txbox")) {
            assertThat(tables(schema)).contains("txbox_inbox", "txbox_outbox", "txbox_schema_history")
                    .doesNotContain("flyway_schema_history");
            // every versioned script from V1 on, whatever the latest is
            assertThat(admin().queryForObject("SELECT count(*) = max(version::int) AND count(*) > 0 FROM \"" + schema
                    + "\".txbox_schema_history WHERE script LIKE 'V%' AND success", Boolean.class)).isTrue();
            assertThat(app.getBean(Inbox.class).consumer()).isEqualTo(TxboxProperties.DEFAULT_CONSUMER);
        }
    }

    @Test
    void defaultMode_isTxbox() {
        String schema = PG.newSchema("mode_default");
        try (ConfigurableApplicationContext app = start(schema)) {
            assertThat(tables(schema)).contains("txbox_inbox", "txbox_schema_history");
        }
    }

    @Test
    void flywayMode_putsTheScriptsInBootsFlywayHistory() {
        String schema = PG.newSchema("mode_flyway");
        try (ConfigurableApplicationContext app = start(schema, "txbox.migrations=flyway",
                "spring.flyway.enabled=true", "txbox.prefix=tb_")) {
            assertThat(tables(schema)).contains("tb_inbox", "tb_outbox", "flyway_schema_history")
                    .doesNotContain("tb_schema_history", "txbox_inbox");
            assertThat(admin().queryForList("SELECT script FROM \"" + schema + "\".flyway_schema_history"
                    + " WHERE success ORDER BY installed_rank", String.class))
                    .contains("V1__txbox_tables.sql", "V2__inbox_received_txid.sql", "V3__inbox_failures.sql");
        }
    }

    @Test
    void noneMode_createsNothing() {
        String schema = PG.newSchema("mode_none");
        try (ConfigurableApplicationContext app = start(schema, "txbox.migrations=none")) {
            assertThat(tables(schema)).doesNotContain("txbox_inbox", "txbox_outbox", "txbox_schema_history",
                    "flyway_schema_history");
            assertThat(app.getBean(Inbox.class)).isNotNull();
        }
    }

    static ConfigurableApplicationContext start(String schema, String... more) {
        return new SpringApplicationBuilder(TestApplication.class)
                .properties(TestDatabase.properties(PG, schema))
                // Boot's Flyway only where a test turns it on; later properties win
                .properties("spring.flyway.enabled=false")
                .properties(more)
                .run();
    }

    private static List<String> tables(String schema) {
        return admin().queryForList("SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                String.class, schema);
    }

    private static JdbcTemplate admin() {
        return new JdbcTemplate(PG.adminDataSource());
    }
}
