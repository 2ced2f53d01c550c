package io.txbox.spring;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboxListener;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.micrometer.MicrometerInboxListener;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Auto-configures txbox on the application's {@link DataSource}: {@link TxboxTables},
 * {@link Outbox}, {@link Inbox} and {@link TxboxTemplate} beans from the {@code txbox.*}
 * properties ({@link TxboxProperties}), and the txbox tables at startup as
 * {@code txbox.migrations} says. Each bean backs off when the application defines its own.
 *
 * <p>Runs after the DataSource, transaction manager, JPA and Flyway auto-configurations
 * (referenced by name, for Spring Boot 4 and 3.5) and only when there is a single
 * {@link DataSource} candidate.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
    "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
    "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
    "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
    "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(TxboxProperties.class)
public class TxboxAutoConfiguration {
    static final String BOOT_FLYWAY_CUSTOMIZER =
            "org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer";

    /** The tables named by {@code txbox.schema} and {@code txbox.prefix}. */
    @Bean
    @ConditionalOnMissingBean
    public TxboxTables txboxTables(TxboxProperties properties) {
        String schema = properties.getSchema();
        check("schema", schema, () -> TxboxTables.inSchema(schema));
        return check("prefix", properties.getPrefix(), () -> new TxboxTables(schema, properties.getPrefix()));
    }

    /**
     * Runs {@link TxboxMigrations#migrate} once at startup, before the outbox and inbox beans
     * are created ({@code txbox.migrations=txbox}, the default).
     */
    @Bean
    @ConditionalOnProperty(prefix = TxboxProperties.PREFIX, name = "migrations", havingValue = "txbox",
            matchIfMissing = true)
    public TxboxMigrationsInitializer txboxMigrationsInitializer(DataSource dataSource, TxboxTables tables) {
        return new TxboxMigrationsInitializer(dataSource, tables);
    }

    /** The outbox on {@link TxboxTables}, capped by {@code txbox.outbox.max-record-bytes}. */
    @Bean
    @ConditionalOnMissingBean
    public Outbox txboxOutbox(TxboxProperties properties, TxboxTables tables,
            ObjectProvider<TxboxMigrationsInitializer> migrations) {
        migrations.ifAvailable(m -> {});
        int max = properties.getOutbox().getMaxRecordBytes();
        return check("outbox.max-record-bytes", max, () -> Outbox.builder().tables(tables).maxRecordBytes(max)
                .notifyRelays(properties.getOutbox().isNotifyRelays()).build());
    }

    /**
     * The inbox of {@code txbox.inbox.consumer} (default {@code spring.application.name}, else
     * {@value TxboxProperties#DEFAULT_CONSUMER}). Its {@code process(DataSource, ..)} refuses to
     * run inside an active Spring transaction; use {@link TxboxTemplate#process} there.
     */
    @Bean
    @ConditionalOnMissingBean
    public Inbox txboxInbox(TxboxProperties properties, TxboxTables tables, Environment environment,
            ObjectProvider<TxboxMigrationsInitializer> migrations, ObjectProvider<InboxListener> listeners) {
        migrations.ifAvailable(m -> {});
        TxboxProperties.InboxProperties p = properties.getInbox();
        String consumer = consumerName(p.getConsumer(), environment.getProperty("spring.application.name"));
        Inbox.Builder builder = check("inbox.consumer", consumer, () -> Inbox.builder(consumer).tables(tables));
        check("inbox.max-attempts", p.getMaxAttempts(), () -> builder.maxAttempts(p.getMaxAttempts()));
        check("inbox.max-payload-bytes", p.getMaxPayloadBytes(), () -> builder.maxPayloadBytes(p.getMaxPayloadBytes()));
        listen(builder, listeners);
        return new SpringInbox(builder.build());
    }

    /** The application's {@link InboxListener} beans, in order, as the inbox's listener. */
    static void listen(Inbox.Builder builder, ObjectProvider<InboxListener> listeners) {
        List<InboxListener> all = listeners.orderedStream().toList();
        if (!all.isEmpty()) {
            builder.listener(all.size() == 1 ? all.get(0) : new InboxListener() {
                @Override
                public void onOutcome(String name, Outcome.Status status) {
                    all.forEach(listener -> listener.onOutcome(name, status));
                }
            });
        }
    }

    /** Outbox and inbox calls in Spring transactions, through the application's transaction manager. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(PlatformTransactionManager.class)
    public TxboxTemplate txboxTemplate(DataSource dataSource, PlatformTransactionManager transactionManager,
            Outbox outbox, Inbox inbox) {
        return new TxboxTemplate(dataSource, transactionManager, outbox, inbox);
    }

    /**
     * The inbox's meters ({@link MicrometerInboxListener}: {@code txbox.inbox.outcomes}) on the
     * application's {@code MeterRegistry}, when Micrometer is on the class path.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
    @ConditionalOnBean(MeterRegistry.class)
    static class InboxMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean
        MicrometerInboxListener txboxInboxMetrics(MeterRegistry registry) {
            return new MicrometerInboxListener(registry);
        }
    }

    /** {@code txbox.migrations=flyway}: txbox's scripts join Spring Boot's Flyway (Boot 4). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = BOOT_FLYWAY_CUSTOMIZER)
    @ConditionalOnProperty(prefix = TxboxProperties.PREFIX, name = "migrations", havingValue = "flyway")
    static class FlywayMigrationsConfiguration {
        @Bean
        FlywayConfigurationCustomizer txboxFlywayConfigurationCustomizer(TxboxTables tables) {
            return new TxboxFlywayCustomizer(tables)::customize;
        }
    }

    /**
     * {@code txbox.migrations=flyway} without Spring Boot 4's Flyway auto-configuration: startup
     * fails, since nothing would create the tables.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass(BOOT_FLYWAY_CUSTOMIZER)
    @ConditionalOnProperty(prefix = TxboxProperties.PREFIX, name = "migrations", havingValue = "flyway")
    static class FlywayMissingConfiguration {
        @Bean
        Object txboxFlywayMissing() {
            throw new InvalidConfigurationPropertyValueException(TxboxProperties.PREFIX + ".migrations", "flyway",
                    "Spring Boot 4's Flyway auto-configuration (" + BOOT_FLYWAY_CUSTOMIZER + ") is not on the class"
                    + " path: add org.springframework.boot:spring-boot-starter-flyway, or set txbox.migrations=txbox");
        }
    }

    static String consumerName(@Nullable String configured, @Nullable String applicationName) {
        if (configured != null) {
            return configured;
        }
        return applicationName != null && !applicationName.isBlank() ? applicationName : TxboxProperties.DEFAULT_CONSUMER;
    }

    /** Runs {@code build}, turning a refused value into an error that names the {@code txbox.*} property. */
    static <T> T check(String property, @Nullable Object value, Supplier<T> build) {
        try {
            return build.get();
        } catch (ConfigException e) {
            throw new InvalidConfigurationPropertyValueException(TxboxProperties.PREFIX + "." + property, value,
                    e.getMessage());
        }
    }
}
