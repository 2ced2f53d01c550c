package io.txbox.relay;

import io.txbox.internal.Args;
import java.time.Instant;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot of a relay, from {@link Relay#status()}.
 *
 * @param relayId the relay's id
 * @param state lifecycle state
 * @param ownedLanes lanes its workers hold right now
 * @param published rows confirmed and deleted since start
 * @param failed failed publish attempts since start (rows scheduled for retry, held back behind a
 *     failed row, or waiting for a missing target)
 * @param deadLettered rows moved to the dead-letter table since start
 * @param lastError the most recent database or broker error, if any
 * @param lastBatchAt when a worker last finished a batch transaction, if ever
 * @param waitingDestinations destinations whose target the broker reported missing (a RabbitMQ
 *     exchange that does not exist), each with the broker's reason: their rows wait, counting no
 *     attempts, until a publish to the destination succeeds (see {@link TargetNotFoundException})
 */
public record RelayStatus(
        String relayId,
        State state,
        int ownedLanes,
        long published,
        long failed,
        long deadLettered,
        @Nullable String lastError,
        @Nullable Instant lastBatchAt,
        Map<String, String> waitingDestinations) {

    public RelayStatus {
        Args.notNull(relayId, "relayId");
        Args.notNull(state, "state");
        waitingDestinations = Map.copyOf(Args.notNull(waitingDestinations, "waitingDestinations"));
    }

    /** Lifecycle of a relay. */
    public enum State { NEW, RUNNING, CLOSING, CLOSED }

    /**
     * Result of {@link Relay#health}.
     *
     * @param up true if the database and every broker answered, and every destination's target
     *     exists
     * @param database {@code "UP"} or the error
     * @param brokers per route destination, {@code "UP"} or {@code "DOWN: "} and the error: the
     *     broker's, or the missing target's (naming the exchange), or the reason the destination's
     *     rows wait
     */
    public record Health(boolean up, String database, Map<String, String> brokers) {
        public Health {
            Args.notNull(database, "database");
            brokers = Map.copyOf(Args.notNull(brokers, "brokers"));
        }
    }
}
