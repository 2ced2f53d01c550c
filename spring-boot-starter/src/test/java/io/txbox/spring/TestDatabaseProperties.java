package io.txbox.spring;

import io.txbox.testkit.TestDatabase;
import java.util.function.Supplier;
import org.springframework.test.context.DynamicPropertyRegistry;

/** Points a test application at a schema of its own: the data source and {@code txbox.schema}. */
final class TestDatabaseProperties {
    private TestDatabaseProperties() {}

    static void register(DynamicPropertyRegistry registry, TestDatabase db, Supplier<String> schema) {
        registry.add("spring.datasource.url", () -> db.jdbcUrl(schema.get()));
        registry.add("spring.datasource.username", db::user);
        registry.add("spring.datasource.password", db::password);
        registry.add("txbox.schema", schema::get);
    }

    /** The same as command-line style properties, for {@code SpringApplicationBuilder}. */
    static String[] properties(TestDatabase db, String schema) {
        return new String[] {
            "spring.datasource.url=" + db.jdbcUrl(schema),
            "spring.datasource.username=" + db.user(),
            "spring.datasource.password=" + db.password(),
            "txbox.schema=" + schema
        };
    }
}
