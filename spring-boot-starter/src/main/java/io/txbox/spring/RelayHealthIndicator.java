package io.txbox.spring;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The embedded relay as {@code txboxRelay} in Spring Boot 4's health endpoint; the figures are
 * {@link RelayHealth}'s.
 */
final class RelayHealthIndicator extends AbstractHealthIndicator {
    private final RelayHealth health;

    RelayHealthIndicator(RelayHealth health) {
        super("txbox relay health check failed");
        this.health = health;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        RelayHealth.Figures figures = health.check();
        (figures.up() ? builder.up() : builder.down()).withDetails(figures.details());
    }
}
