package io.txbox.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import io.txbox.relay.RelayOption;
import io.txbox.relay.micrometer.RelayMetrics;
import io.txbox.spring.TxboxProperties.RelayProperties;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportSelector;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.kafka.core.ProducerFactory;

/**
 * The embedded relay ({@code txbox.relay.enabled=true}): a {@link Relay} on the application's
 * {@link DataSource} and txbox tables, routed by {@code txbox.relay.routes.*}, woken by the
 * {@link Outbox} bean's sends, started and stopped with the application context, publishing
 * through the application's Spring Kafka / Spring AMQP connection settings unless {@code
 * txbox.relay.kafka.*} / {@code txbox.relay.rabbitmq.*} say otherwise. With Micrometer and a
 * {@code MeterRegistry} bean, its meters ({@link RelayMetrics}) are registered there; with
 * Spring Boot's health support (Spring Boot 4's {@code spring-boot-health}, or Spring Boot 3's
 * actuator), {@code txboxRelay} reports its health ({@link RelayHealth}).
 */
@AutoConfiguration(after = TxboxAutoConfiguration.class, afterName = {
    "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
    "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.autoconfigure.kafka.KafkaAutoConfiguration",
    "org.springframework.boot.autoconfigure.amqp.RabbitAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnProperty(prefix = TxboxProperties.PREFIX, name = "relay.enabled", havingValue = "true")
@ConditionalOnSingleCandidate(DataSource.class)
@ConditionalOnBean({Outbox.class, TxboxTables.class})
public class TxboxRelayAutoConfiguration {
    static final String SPRING_KAFKA = "org.springframework.kafka.core.ProducerFactory";
    static final String SPRING_RABBIT = "org.springframework.amqp.rabbit.connection.AbstractConnectionFactory";
    static final String MICROMETER = "io.micrometer.core.instrument.MeterRegistry";
    static final String BOOT_HEALTH = "org.springframework.boot.health.contributor.AbstractHealthIndicator";
    static final String BOOT3_HEALTH = "org.springframework.boot.actuate.health.AbstractHealthIndicator";

    @Bean
    RelayListeners txboxRelayListeners(ObjectProvider<RelayListener> listeners) {
        return new RelayListeners(listeners.orderedStream().toList());
    }

    /**
     * The relay, built (and its RabbitMQ connection opened) when the context starts; {@link
     * RelayLifecycle} starts it after the refresh and closes it on shutdown.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public Relay txboxRelay(TxboxProperties properties, DataSource dataSource, TxboxTables tables, Outbox outbox,
            RelayListeners listeners, ObjectProvider<SpringKafkaSettings> springKafka,
            ObjectProvider<SpringRabbitSettings> springRabbit) {
        RelayProperties p = properties.getRelay();
        Relay.Builder builder = Relay.builder().dataSource(dataSource).tables(tables).wakeOn(outbox)
                .listener(listeners.listener());
        applyOptions(p, builder);
        RelayRoutes routes = new RelayRoutes(p, springKafka.getIfAvailable(), springRabbit.getIfAvailable());
        routes.addTo(builder);
        return TxboxAutoConfiguration.check("relay.publish-timeout", p.getPublishTimeout(), builder::build);
    }

    /**
     * Sets every {@link RelayOption} from {@code txbox.relay.<key>}: the property named by the
     * option's key, checked by the option's rule, so a bad value names its property.
     */
    static Relay.Builder applyOptions(RelayProperties properties, Relay.Builder builder) {
        BeanWrapper values = new BeanWrapperImpl(properties);
        for (RelayOption<?> option : RelayOption.all()) {
            apply(option, values.getPropertyValue(propertyName(option)), builder);
        }
        return builder;
    }

    private static <T> void apply(RelayOption<T> option, @Nullable Object value, Relay.Builder builder) {
        if (value != null) {
            T typed = option.type().cast(value);
            TxboxAutoConfiguration.check("relay." + option.key(), value, () -> option.set(builder, typed));
        }
    }

    /** {@code lane-lease} to the bean property {@code laneLease}. */
    static String propertyName(RelayOption<?> option) {
        StringBuilder name = new StringBuilder();
        boolean upper = false;
        for (char c : option.key().toCharArray()) {
            if (c == '-') {
                upper = true;
            } else {
                name.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return name.toString();
    }

    /** Starts the relay with the context and stops it, gracefully, before the DataSource closes. */
    @Bean
    RelayLifecycle txboxRelayLifecycle(Relay relay) {
        return new RelayLifecycle(relay);
    }

    /** Spring Kafka's producer connection settings ({@code spring.kafka.*}) as the relay's defaults. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = SPRING_KAFKA)
    static class SpringKafkaConfiguration {
        @Bean
        SpringKafkaSettings txboxRelaySpringKafkaSettings(ObjectProvider<ProducerFactory<?, ?>> factories) {
            ProducerFactory<?, ?> factory = factories.getIfUnique();
            Map<String, String> settings = new LinkedHashMap<>();
            if (factory != null) {
                Map<String, Object> config;
                try {
                    config = factory.getConfigurationProperties();
                } catch (UnsupportedOperationException e) {
                    config = Map.of();
                }
                config.forEach((key, value) -> {
                    if (value != null && SpringKafkaSettings.isConnectionSetting(key)) {
                        settings.put(key, kafkaValue(value));
                    }
                });
            }
            return new SpringKafkaSettings(settings);
        }

        private static String kafkaValue(Object value) {
            if (value instanceof Collection<?> c) {
                return c.stream().map(String::valueOf).collect(Collectors.joining(","));
            }
            if (value instanceof org.apache.kafka.common.config.types.Password password) {
                return password.value();
            }
            if (value instanceof Class<?> type) {
                return type.getName();
            }
            return String.valueOf(value);
        }
    }

    /** Spring AMQP's RabbitMQ client settings ({@code spring.rabbitmq.*}) as the relay's defaults. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = SPRING_RABBIT)
    static class SpringRabbitConfiguration {
        @Bean
        SpringRabbitSettings txboxRelaySpringRabbitSettings(
                ObjectProvider<org.springframework.amqp.rabbit.connection.AbstractConnectionFactory> factories) {
            var factory = factories.getIfUnique();
            return factory == null ? null : new SpringRabbitSettings(factory.getRabbitConnectionFactory());
        }
    }

    /** The relay's meters ({@link RelayMetrics}) on the application's {@code MeterRegistry}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = MICROMETER)
    @ConditionalOnBean(MeterRegistry.class)
    static class RelayMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean
        RelayMetrics txboxRelayMetrics(MeterRegistry registry) {
            return RelayMetrics.of(registry);
        }
    }

    /** {@code txboxRelay} in Spring Boot's health endpoint (Spring Boot 4's health support). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = BOOT_HEALTH)
    static class RelayHealthConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "txboxRelayHealthIndicator")
        RelayHealthIndicator txboxRelayHealthIndicator(Relay relay, RelayListeners listeners, TxboxProperties properties) {
            return new RelayHealthIndicator(new RelayHealth(relay, listeners, properties.getRelay().getHealthTimeout()));
        }
    }

    /**
     * {@code txboxRelay} in Spring Boot 3's health endpoint: a configuration compiled against
     * Spring Boot 3's actuator, imported by name so that nothing of it loads on Spring Boot 4.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = BOOT3_HEALTH)
    @Import(Boot3HealthImport.class)
    static class Boot3RelayHealthImportConfiguration {
    }

    static final class Boot3HealthImport implements ImportSelector {
        @Override
        public String[] selectImports(AnnotationMetadata metadata) {
            return new String[] {"io.txbox.spring.Boot3RelayHealthConfiguration"};
        }
    }
}
