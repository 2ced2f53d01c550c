package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.util.Arrays;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.Location;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * {@code txbox.migrations=flyway}: the application's Flyway gets the scripts and placeholders of
 * the database it migrates, as {@link TxboxMigrations#flyway} would use.
 */
class TxboxFlywayCustomizerIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void customize_addsTheScriptsAndPlaceholdersOfTheConfiguredDatabase(TestDatabase db) {
        TxboxTables tables = new TxboxTables(db.schema(), "tb_");
        FluentConfiguration configuration = Flyway.configure().dataSource(db.dataSource())
                .locations("classpath:db/migration");

        new TxboxFlywayCustomizer(tables).customize(configuration);

        assertThat(Arrays.stream(configuration.getLocations()).map(Location::getDescriptor))
                .containsExactly("classpath:db/migration", TxboxMigrations.location(db.dataSource()));
        assertThat(configuration.getPlaceholders())
                .containsAllEntriesOf(TxboxMigrations.placeholders(db.dataSource(), tables));
    }
}
