package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.inbox.http.HttpIdempotency;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;

/** When the Idempotency-Key filter is installed, and how a wrong setup fails; no database is opened. */
class TxboxHttpAutoConfigurationTest {
    private final DataSource dataSource = new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/none");
    private final WebApplicationContextRunner web = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class, TxboxHttpAutoConfiguration.class))
            .withPropertyValues("txbox.migrations=none")
            .withBean(DataSource.class, () -> dataSource);

    @Test
    void enabled_inAServletApplication_installsTheFilter() {
        web.withBean(PlatformTransactionManager.class, () -> new DataSourceTransactionManager(dataSource))
                .withPropertyValues("txbox.http.idempotency.enabled=true")
                .run(context -> assertThat(context).hasSingleBean(IdempotencyFilter.class));
    }

    @Test
    void notEnabled_noFilter() {
        web.withBean(PlatformTransactionManager.class, () -> new DataSourceTransactionManager(dataSource))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(IdempotencyFilter.class));
    }

    @Test
    void enabled_outsideAWebApplication_noFilter() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(TxboxAutoConfiguration.class, TxboxHttpAutoConfiguration.class))
                .withPropertyValues("txbox.migrations=none", "txbox.http.idempotency.enabled=true")
                .withBean(DataSource.class, () -> dataSource)
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(IdempotencyFilter.class));
    }

    @Test
    void enabled_withoutInboxHttp_failsStartupNamingTheArtifact() {
        web.withClassLoader(new FilteredClassLoader(HttpIdempotency.class))
                .withPropertyValues("txbox.http.idempotency.enabled=true")
                .run(context -> {
                    assertThat(context).hasFailed();
                    Throwable cause = NestedExceptionUtils.getRootCause(context.getStartupFailure());
                    assertThat(cause).isInstanceOf(InvalidConfigurationPropertyValueException.class)
                            .hasMessageContaining("txbox.http.idempotency.enabled")
                            .hasMessageContaining("io.txbox:txbox-inbox-http");
                });
    }

    @Test
    void enabled_withoutATransactionManager_failsStartupSayingWhy() {
        web.withPropertyValues("txbox.http.idempotency.enabled=true")
                .run(context -> assertThat(NestedExceptionUtils.getRootCause(context.getStartupFailure()))
                        .hasMessageContaining("PlatformTransactionManager"));
    }

    @Test
    void badValues_failStartupNamingTheProperty() {
        web.withBean(PlatformTransactionManager.class, () -> new DataSourceTransactionManager(dataSource))
                .withPropertyValues("txbox.http.idempotency.enabled=true", "txbox.http.idempotency.header-name=bad key")
                .run(context -> assertThat(NestedExceptionUtils.getRootCause(context.getStartupFailure()))
                        .hasMessageContaining("txbox.http.idempotency.header-name"));
        web.withBean(PlatformTransactionManager.class, () -> new DataSourceTransactionManager(dataSource))
                .withPropertyValues("txbox.http.idempotency.enabled=true", "txbox.http.idempotency.paths=orders")
                .run(context -> assertThat(NestedExceptionUtils.getRootCause(context.getStartupFailure()))
                        .hasMessageContaining("txbox.http.idempotency.paths"));
    }
}
