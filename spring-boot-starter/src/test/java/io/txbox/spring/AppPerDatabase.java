package io.txbox.spring;

import io.txbox.testkit.TestDatabase;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * One application per database for a test class: started by the first test on that database,
 * kept for the class's other tests, closed after the class. Register it as a static extension.
 */
final class AppPerDatabase implements AfterAllCallback {
    private final Function<TestDatabase, ConfigurableApplicationContext> start;
    private final Map<TestDatabase.Kind, ConfigurableApplicationContext> apps = new EnumMap<>(TestDatabase.Kind.class);

    AppPerDatabase(Function<TestDatabase, ConfigurableApplicationContext> start) {
        this.start = start;
    }

    /** {@code db}'s application, started now if this is the first test on it. */
    ConfigurableApplicationContext on(TestDatabase db) {
        return apps.computeIfAbsent(db.kind(), k -> start.apply(db));
    }

    @Override
    public void afterAll(ExtensionContext context) {
        apps.values().forEach(ConfigurableApplicationContext::close);
        apps.clear();
    }
}
