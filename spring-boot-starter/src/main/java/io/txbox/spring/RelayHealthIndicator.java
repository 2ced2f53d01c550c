package io.txbox.spring;

import io.txbox.relay.Relay;
import io.txbox.relay.RelayStatus;
import java.time.Duration;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health of the embedded relay, as {@code txboxRelay} in Spring Boot's health endpoint: DOWN
 * unless the relay is running, the database and every broker answer within {@code
 * txbox.relay.health-timeout}, and every destination's target exists. Details: {@code relayId},
 * {@code state}, {@code database}, {@code brokers} (per destination), {@code lanesHeld}, {@code
 * backlogRows} and {@code backlogOldestAgeSeconds} (the latest sample, taken every {@code
 * txbox.relay.backlog-interval}), {@code waitingDestinations} and {@code lastError}. Each call
 * does I/O (one query, one check per broker).
 */
final class RelayHealthIndicator extends AbstractHealthIndicator {
    private final Relay relay;
    private final RelayListeners listeners;
    private final Duration timeout;

    RelayHealthIndicator(Relay relay, RelayListeners listeners, Duration timeout) {
        super("txbox relay health check failed");
        this.relay = relay;
        this.listeners = listeners;
        this.timeout = timeout;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        RelayStatus status = relay.status();
        RelayStatus.Health health = relay.health(timeout);
        boolean up = health.up() && status.state() == RelayStatus.State.RUNNING;
        (up ? builder.up() : builder.down())
                .withDetail("relayId", status.relayId())
                .withDetail("state", status.state().name())
                .withDetail("database", health.database())
                .withDetail("brokers", health.brokers())
                .withDetail("lanesHeld", status.ownedLanes());
        RelayListeners.Backlog backlog = listeners.backlog();
        if (backlog != null) {
            builder.withDetail("backlogRows", backlog.rows())
                    .withDetail("backlogOldestAgeSeconds", backlog.oldestAge().toMillis() / 1000.0);
        }
        if (!status.waitingDestinations().isEmpty()) {
            builder.withDetail("waitingDestinations", status.waitingDestinations());
        }
        if (status.lastError() != null) {
            builder.withDetail("lastError", status.lastError());
        }
    }
}
