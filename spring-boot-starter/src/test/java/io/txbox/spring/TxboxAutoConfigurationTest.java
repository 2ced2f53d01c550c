package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;

/** Which beans the auto-configuration registers, and when it backs off; no database is opened. */
class TxboxAutoConfigurationTest {
    private final DataSource dataSource = new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/none");
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class))
            .withPropertyValues("txbox.migrations=none")
            .withBean(DataSource.class, () -> dataSource);

    @Test
    void dataSourceAndTransactionManager_registerEveryBean() {
        runner.withBean(PlatformTransactionManager.class, () -> new DataSourceTransactionManager(dataSource))
                .withPropertyValues("txbox.schema=orders", "txbox.inbox.consumer=billing")
                .run(context -> {
                    assertThat(context).hasSingleBean(TxboxTables.class).hasSingleBean(Outbox.class)
                            .hasSingleBean(Inbox.class).hasSingleBean(TxboxTemplate.class)
                            .doesNotHaveBean(TxboxMigrationsInitializer.class);
                    assertThat(context.getBean(TxboxTables.class).schema()).isEqualTo("orders");
                    assertThat(context.getBean(Inbox.class).consumer()).isEqualTo("billing");
                    assertThat(context.getBean(Inbox.class)).isInstanceOf(SpringInbox.class);
                });
    }

    @Test
    void noTransactionManager_noTemplate() {
        runner.run(context -> assertThat(context).hasSingleBean(Outbox.class).doesNotHaveBean(TxboxTemplate.class));
    }

    @Test
    void noDataSource_nothingRegistered() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class))
                .run(context -> assertThat(context).doesNotHaveBean(TxboxTables.class).doesNotHaveBean(Inbox.class));
    }

    @Test
    void userBeans_replaceTheAutoConfiguredOnes() {
        Outbox outbox = Outbox.builder().build();
        Inbox inbox = Inbox.builder("mine").build();
        runner.withBean(Outbox.class, () -> outbox).withBean(Inbox.class, () -> inbox)
                .withBean(TxboxTables.class, () -> TxboxTables.inSchema("custom"))
                .run(context -> {
                    assertThat(context.getBean(Outbox.class)).isSameAs(outbox);
                    assertThat(context.getBean(Inbox.class)).isSameAs(inbox);
                    assertThat(context.getBean(TxboxTables.class).schema()).isEqualTo("custom");
                });
    }

    @Test
    void flywayMode_withoutBootFlyway_failsStartupNamingTheProperty() {
        runner.withClassLoader(new FilteredClassLoader("org.springframework.boot.flyway"))
                .withPropertyValues("txbox.migrations=flyway")
                .run(context -> {
                    assertThat(context).hasFailed();
                    Throwable cause = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
                    assertThat(cause).isInstanceOf(InvalidConfigurationPropertyValueException.class)
                            .hasMessageContaining("txbox.migrations").hasMessageContaining("spring-boot-starter-flyway");
                });
    }
}
