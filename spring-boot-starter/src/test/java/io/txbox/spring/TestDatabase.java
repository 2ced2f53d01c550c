package io.txbox.spring;

import io.txbox.testkit.TestPostgres;
import java.util.function.Supplier;
import org.springframework.test.context.DynamicPropertyRegistry;

/** Points a test application at a schema of its own: the data source and {@code txbox.schema}. */
final class TestDatabase {
    private TestDatabase() {}

    static void register(DynamicPropertyRegistry registry, TestPostgres pg, Supplier<String> schema) {
        registry.add("spring.datasource.url", () -> pg.jdbcUrl(schema.get()));
        registry.add("spring.datasource.username", pg::user);
        registry.add("spring.datasource.password", pg::password);
        registry.add("txbox.schema", schema::get);
    }

    /** The same as command-line style properties, for {@code SpringApplicationBuilder}. */
    static String[] properties(TestPostgres pg, String schema) {
        return new String[] {
            "spring.datasource.url=" + pg.jdbcUrl(schema),
            "spring.datasource.username=" + pg.user(),
            "spring.datasource.password=" + pg.password(),
            "txbox.schema=" + schema
        };
    }
}
