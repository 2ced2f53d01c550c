package io.txbox.spring;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.api.Location;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Adds txbox's scripts to the application's Flyway: those of the database Flyway migrates ({@link
 * TxboxMigrations#location(DataSource)}) after the configured locations, their placeholders
 * ({@link TxboxMigrations#placeholders(DataSource, TxboxTables)}), and the txbox schema
 * after the configured schemas when {@code spring.flyway.schemas} is set (so Flyway creates it).
 * Kept free of Spring Boot's Flyway types, so the class loads without them.
 */
final class TxboxFlywayCustomizer {
    private final TxboxTables tables;

    TxboxFlywayCustomizer(TxboxTables tables) {
        this.tables = tables;
    }

    void customize(FluentConfiguration configuration) {
        // Boot hands the configuration over with its data source set; the scripts depend on the database
        DataSource dataSource = configuration.getDataSource();
        String scripts = dataSource == null ? TxboxMigrations.LOCATION : TxboxMigrations.location(dataSource);
        Map<String, String> ours = dataSource == null ? TxboxMigrations.placeholders(tables)
                : TxboxMigrations.placeholders(dataSource, tables);
        List<String> locations = new ArrayList<>();
        for (Location location : configuration.getLocations()) {
            locations.add(location.getDescriptor());
        }
        if (!locations.contains(scripts)) {
            locations.add(scripts);
        }
        configuration.locations(locations.toArray(String[]::new));

        Map<String, String> placeholders = new HashMap<>(configuration.getPlaceholders());
        ours.forEach((name, value) -> {
            String existing = placeholders.get(name);
            if (existing != null && !existing.equals(value)) {
                throw new InvalidConfigurationPropertyValueException("spring.flyway.placeholders." + name, existing,
                        "txbox.migrations=flyway uses the Flyway placeholder '" + name + "' for its own scripts"
                        + " and needs it to be '" + value + "'; rename the application's placeholder or set"
                        + " txbox.migrations=txbox");
            }
            placeholders.put(name, value);
        });
        configuration.placeholders(placeholders);

        String[] schemas = configuration.getSchemas();
        if (schemas.length > 0 && !Arrays.asList(schemas).contains(tables.schema())) {
            String[] more = Arrays.copyOf(schemas, schemas.length + 1);
            more[schemas.length] = tables.schema();
            configuration.schemas(more);
        }
    }
}
