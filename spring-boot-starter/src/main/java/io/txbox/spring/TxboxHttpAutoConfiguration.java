package io.txbox.spring;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboxListener;
import io.txbox.inbox.http.HttpIdempotency;
import io.txbox.spring.TxboxHttpProperties.IdempotencyProperties;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * The Spring MVC Idempotency-Key filter ({@code txbox.http.idempotency.enabled=true}, in a
 * servlet web application): requests with one of {@code txbox.http.idempotency.methods} on
 * {@code txbox.http.idempotency.paths} run once per key through {@link HttpIdempotency}'s
 * transactional form, with the controller's writes (JdbcTemplate, JPA, {@code @Transactional}
 * services) and the stored response in one transaction of the application's transaction
 * manager. The keys live in the txbox inbox table under their own consumer name. Without
 * {@code txbox-inbox-http} on the class path, enabling it fails startup naming the artifact.
 */
@AutoConfiguration(after = TxboxAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnProperty(prefix = TxboxHttpAutoConfiguration.PREFIX, name = "enabled", havingValue = "true")
public class TxboxHttpAutoConfiguration {
    static final String PREFIX = TxboxProperties.PREFIX + ".http.idempotency";
    static final String HTTP_IDEMPOTENCY = "io.txbox.inbox.http.HttpIdempotency";

    /** The filter, with {@code txbox-inbox-http} and Spring MVC's servlet stack on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {HTTP_IDEMPOTENCY, "jakarta.servlet.Filter", "org.springframework.web.filter.OncePerRequestFilter"})
    static class FilterConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "txboxIdempotencyFilter")
        IdempotencyFilter txboxIdempotencyFilter(TxboxProperties properties, TxboxTables tables, Environment environment,
                ObjectProvider<DataSource> dataSources, ObjectProvider<PlatformTransactionManager> transactionManagers,
                ObjectProvider<TxboxMigrationsInitializer> migrations, ObjectProvider<InboxListener> listeners) {
            DataSource dataSource = dataSources.getIfUnique();
            PlatformTransactionManager transactionManager = transactionManagers.getIfUnique();
            if (dataSource == null || transactionManager == null) {
                throw new InvalidConfigurationPropertyValueException(PREFIX + ".enabled", true, "the Idempotency-Key"
                        + " filter runs each request in a transaction of the application's transaction manager on its"
                        + " DataSource, but there is not exactly one DataSource and one PlatformTransactionManager bean");
            }
            migrations.ifAvailable(m -> {});
            IdempotencyProperties p = properties.getHttp().getIdempotency();
            String consumer = p.getConsumer() != null ? p.getConsumer() : TxboxAutoConfiguration.consumerName(
                    properties.getInbox().getConsumer(), environment.getProperty("spring.application.name")) + ".http";
            Inbox.Builder inbox = check("consumer", consumer, () -> Inbox.builder(consumer).tables(tables)
                    .fingerprint(HttpIdempotency.fingerprint()));
            check("lease", p.getLease(), () -> inbox.lease(p.getLease()));
            check("max-attempts", p.getMaxAttempts(), () -> inbox.maxAttempts(p.getMaxAttempts()));
            check("max-body-bytes", p.getMaxBodyBytes(), () -> inbox.maxPayloadBytes(p.getMaxBodyBytes()));
            TxboxAutoConfiguration.listen(inbox, listeners);
            HttpIdempotency.Builder builder = HttpIdempotency.builder(inbox.build(), dataSource)
                    .transactions(new SpringTransactions(dataSource, transactionManager));
            check("header-name", p.getHeaderName(), () -> builder.headerName(p.getHeaderName()));
            check("max-body-bytes", p.getMaxBodyBytes(), () -> builder.maxBodyBytes(p.getMaxBodyBytes()));
            if (p.getReplayedHeaders() != null) {
                check("replayed-headers", p.getReplayedHeaders(), () -> builder.replayedHeaders(p.getReplayedHeaders()));
            }
            if (!p.isKeyRequired()) {
                builder.keyRequired(request -> false);
            }
            Set<String> methods = p.getMethods().stream().map(m -> m.trim().toUpperCase(Locale.ROOT))
                    .collect(Collectors.toUnmodifiableSet());
            if (methods.isEmpty() || methods.contains("")) {
                throw new InvalidConfigurationPropertyValueException(PREFIX + ".methods", p.getMethods(),
                        "at least one request method is needed");
            }
            List<String> paths = List.copyOf(p.getPaths());
            if (paths.isEmpty() || paths.stream().anyMatch(path -> !path.startsWith("/"))) {
                throw new InvalidConfigurationPropertyValueException(PREFIX + ".paths", p.getPaths(),
                        "at least one path pattern is needed, each starting with /");
            }
            return new IdempotencyFilter(builder.build(), methods, paths, p.getMaxBodyBytes(), p.getOrder());
        }

        private static <T> T check(String property, Object value, java.util.function.Supplier<T> build) {
            return TxboxAutoConfiguration.check("http.idempotency." + property, value, build);
        }
    }

    /** {@code txbox.http.idempotency.enabled=true} without {@code txbox-inbox-http}: startup fails naming it. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass(HTTP_IDEMPOTENCY)
    static class FilterMissingConfiguration {
        @Bean
        Object txboxIdempotencyFilterMissing() {
            throw new InvalidConfigurationPropertyValueException(PREFIX + ".enabled", true, "the Idempotency-Key filter"
                    + " needs io.txbox:txbox-inbox-http on the class path: add it as a dependency, or remove the property");
        }
    }
}
