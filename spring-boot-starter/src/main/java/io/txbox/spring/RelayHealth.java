package io.txbox.spring;

import io.txbox.relay.Relay;
import io.txbox.relay.RelayStatus;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The embedded relay's health figures, for the health indicator of either Spring Boot line:
 * DOWN unless the relay is running, the database and every broker answer within {@code
 * txbox.relay.health-timeout}, and every destination's target exists. Details: {@code relayId},
 * {@code state}, {@code database}, {@code brokers} (per destination), {@code lanesHeld}, {@code
 * backlogRows} and {@code backlogOldestAgeSeconds} (the latest sample, taken every {@code
 * txbox.relay.backlog-interval}), {@code parkedKeys} and {@code parkedOldestAgeSeconds} (routing
 * keys parked at a dead letter, sampled with the backlog; they do not make the relay DOWN),
 * {@code waitingDestinations} and {@code lastError}. Each check
 * does I/O (one query, one check per broker).
 */
final class RelayHealth {
    private final Relay relay;
    private final RelayListeners listeners;
    private final Duration timeout;

    RelayHealth(Relay relay, RelayListeners listeners, Duration timeout) {
        this.relay = relay;
        this.listeners = listeners;
        this.timeout = timeout;
    }

    /** Whether the relay is healthy, and the details that say why. */
    record Figures(boolean up, Map<String, Object> details) {}

    Figures check() {
        RelayStatus status = relay.status();
        RelayStatus.Health health = relay.health(timeout);
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("relayId", status.relayId());
        details.put("state", status.state().name());
        details.put("database", health.database());
        details.put("brokers", health.brokers());
        details.put("lanesHeld", status.ownedLanes());
        RelayListeners.Backlog backlog = listeners.backlog();
        if (backlog != null) {
            details.put("backlogRows", backlog.rows());
            details.put("backlogOldestAgeSeconds", backlog.oldestAge().toMillis() / 1000.0);
        }
        RelayListeners.Backlog parked = listeners.parked();
        if (parked != null) {
            details.put("parkedKeys", parked.rows());
            details.put("parkedOldestAgeSeconds", parked.oldestAge().toMillis() / 1000.0);
        }
        if (!status.waitingDestinations().isEmpty()) {
            details.put("waitingDestinations", status.waitingDestinations());
        }
        if (status.lastError() != null) {
            details.put("lastError", status.lastError());
        }
        return new Figures(health.up() && status.state() == RelayStatus.State.RUNNING, details);
    }
}
