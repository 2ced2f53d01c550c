package io.txbox.spring;

import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * The embedded relay as {@code txboxRelay} in Spring Boot 3's health endpoint; the figures are
 * {@link RelayHealth}'s. Compiled against Spring Boot 3.5's actuator (see the module's pom).
 */
final class Boot3RelayHealthIndicator extends AbstractHealthIndicator {
    private final RelayHealth health;

    Boot3RelayHealthIndicator(RelayHealth health) {
        super("txbox relay health check failed");
        this.health = health;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        RelayHealth.Figures figures = health.check();
        (figures.up() ? builder.up() : builder.down()).withDetails(figures.details());
    }
}
