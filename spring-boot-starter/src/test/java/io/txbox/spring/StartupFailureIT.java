package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import org.assertj.core.api.AbstractThrowableAssert;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.NestedExceptionUtils;

/**
 * A refused {@code txbox.*} value stops the application, naming the property and the value, on
 * each database.
 */
class StartupFailureIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void schema_badName_failsStartupNamingPropertyAndValue(TestDatabase db) {
        assertStartupFails(db, "txbox.schema=Bad-Name")
                .hasMessageContaining("txbox.schema").hasMessageContaining("Bad-Name");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void prefix_badName_failsStartupNamingPropertyAndValue(TestDatabase db) {
        assertStartupFails(db, "txbox.prefix=x y").hasMessageContaining("txbox.prefix").hasMessageContaining("x y");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inboxMaxAttempts_zero_failsStartupNamingPropertyAndValue(TestDatabase db) {
        assertStartupFails(db, "txbox.inbox.max-attempts=0")
                .hasMessageContaining("txbox.inbox.max-attempts").hasMessageContaining("'0'");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inboxConsumer_badName_failsStartupNamingPropertyAndValue(TestDatabase db) {
        assertStartupFails(db, "txbox.inbox.consumer=no spaces")
                .hasMessageContaining("txbox.inbox.consumer").hasMessageContaining("no spaces");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void outboxMaxRecordBytes_zero_failsStartupNamingPropertyAndValue(TestDatabase db) {
        assertStartupFails(db, "txbox.outbox.max-record-bytes=0")
                .hasMessageContaining("txbox.outbox.max-record-bytes");
    }

    private static AbstractThrowableAssert<?, ? extends Throwable> assertStartupFails(TestDatabase db, String property) {
        String[] base = TestDatabaseProperties.properties(db, db.schema());
        // the bad value comes last, so it wins over the schema the test database sets
        return assertThatThrownBy(() -> start(base, property).close())
                .extracting(NestedExceptionUtils::getMostSpecificCause, InstanceOfAssertFactories.THROWABLE)
                .isInstanceOf(InvalidConfigurationPropertyValueException.class);
    }

    private static ConfigurableApplicationContext start(String[] base, String property) {
        return new SpringApplicationBuilder(TestApplication.class)
                .properties(base).properties(property).run();
    }
}
