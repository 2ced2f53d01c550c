package io.txbox.saga;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What one run of the saga needs to know.
 *
 * @param orders orders the client places
 * @param concurrency client requests in flight at once
 * @param chaos how much trouble to make
 * @param jdbcUrl the database holding every service's schema: PostgreSQL, or MariaDB ({@code
 *     jdbc:mariadb:}), where each schema is a database
 * @param jdbcUser database user
 * @param jdbcPassword database password, may be empty
 * @param amqpUri the RabbitMQ broker
 * @param kafkaBootstrap the Kafka broker, or {@code null} to start a private one
 * @param drainTimeout how long to wait, after the last order was accepted, for every order to
 *     finish
 * @param namePrefix prefix of schemas, topics, exchanges and queues ({@code saga} gives schema
 *     {@code saga_order}); the run drops and recreates its schemas
 * @param progressEvery how often a progress line is printed; zero for never
 */
public record SagaSettings(int orders, int concurrency, Chaos chaos, String jdbcUrl, String jdbcUser,
        String jdbcPassword, String amqpUri, @Nullable String kafkaBootstrap, Duration drainTimeout,
        String namePrefix, Duration progressEvery) {

    public SagaSettings {
        if (orders < 1) {
            throw new IllegalArgumentException("orders must be at least 1, but was " + orders);
        }
        if (concurrency < 1 || concurrency > 512) {
            throw new IllegalArgumentException("concurrency must be between 1 and 512, but was " + concurrency);
        }
        if (!namePrefix.matches("[a-z][a-z0-9_]{0,20}")) {
            throw new IllegalArgumentException("name prefix must match [a-z][a-z0-9_]{0,20}, but was '" + namePrefix + "'");
        }
    }

    /** Whether the services run on MariaDB (a {@code jdbc:mariadb:} or {@code jdbc:mysql:} URL). */
    public boolean mariadb() {
        return jdbcUrl.startsWith("jdbc:mariadb:") || jdbcUrl.startsWith("jdbc:mysql:");
    }

    public String schema(String service) {
        return namePrefix + "_" + service;
    }

    /** Kafka topic, RabbitMQ exchange or queue name for {@code what}. */
    public String brokerName(String what) {
        return namePrefix.replace('_', '-') + "." + what;
    }
}
