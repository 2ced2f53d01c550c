package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.testkit.TestPostgres;
import org.assertj.core.api.AbstractThrowableAssert;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.NestedExceptionUtils;

/** A refused {@code txbox.*} value stops the application, naming the property and the value. */
class StartupFailureIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @Test
    void schema_badName_failsStartupNamingPropertyAndValue() {
        assertStartupFails("txbox.schema=Bad-Name")
                .hasMessageContaining("txbox.schema").hasMessageContaining("Bad-Name");
    }

    @Test
    void prefix_badName_failsStartupNamingPropertyAndValue() {
        assertStartupFails("txbox.prefix=x y").hasMessageContaining("txbox.prefix").hasMessageContaining("x y");
    }

    @Test
    void inboxMaxAttempts_zero_failsStartupNamingPropertyAndValue() {
        assertStartupFails("txbox.inbox.max-attempts=0")
                .hasMessageContaining("txbox.inbox.max-attempts").hasMessageContaining("'0'");
    }

    @Test
    void inboxConsumer_badName_failsStartupNamingPropertyAndValue() {
        assertStartupFails("txbox.inbox.consumer=no spaces")
                .hasMessageContaining("txbox.inbox.consumer").hasMessageContaining("no spaces");
    }

    @Test
    void outboxMaxRecordBytes_zero_failsStartupNamingPropertyAndValue() {
        assertStartupFails("txbox.outbox.max-record-bytes=0")
                .hasMessageContaining("txbox.outbox.max-record-bytes");
    }

    private static AbstractThrowableAssert<?, ? extends Throwable> assertStartupFails(String property) {
        String schema = PG.schema();
        String[] base = TestDatabase.properties(PG, schema);
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
