package io.txbox.relay;

import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * The one broker-specific part of the relay: sends a record and reports when the broker has
 * confirmed it. Claiming, batching, timeouts, backoff, dead-lettering and metrics are the
 * relay's job and are the same for every broker.
 *
 * <p>Implementations: {@code io.txbox.relay.kafka.KafkaPublisher},
 * {@code io.txbox.relay.rabbitmq.RabbitPublisher}.
 *
 * <p>Threading: each relay worker calls {@link #publish} from its own thread, a batch at a
 * time, in outbox id order; an implementation must keep that order per routing key on the
 * wire. Calls from different workers may overlap. A publisher that {@link #overlapsBatches}
 * may be handed a worker's next batch before the one before it is confirmed.
 */
public interface Publisher extends AutoCloseable {
    /** Broker name used in metric tags and logs, for example {@code kafka}. */
    String broker();

    /**
     * Starts publishing {@code record} to {@code target} (a topic, an exchange) and returns at
     * once or after brief back-pressure. The stage completes normally when the broker has
     * durably accepted the message, and exceptionally otherwise, preferably with a {@link
     * PublishException} saying whether a retry can help. The relay stops waiting after its
     * publish timeout, so a stage that never completes costs a retry, not a stuck row.
     */
    CompletionStage<Void> publish(String target, PublishRecord record);

    /**
     * Called after the last record of a batch was handed to {@link #publish}, before the relay
     * waits for confirmations (with {@link #overlapsBatches}, of a chain of batches). Default:
     * nothing.
     */
    default void endOfBatch() {}

    /**
     * Whether a worker may hand this publisher its next batch while the one before still waits
     * for confirmations (at most two batches in flight per worker), so the broker's window does
     * not drain at each batch's end. {@link #endOfBatch} is then called once for such a chain of
     * batches, before the relay waits for its last one: after it, nothing more is handed over
     * until the relay has waited for every record handed over before it. Only for a publisher
     * that keeps its records' order per routing key across batches (the relay holds back the
     * later rows of a key whose failure was reported, but not those already handed over).
     * Default: false, a batch at a time.
     */
    default boolean overlapsBatches() {
        return false;
    }

    /**
     * Checks that the broker answers, for health endpoints.
     *
     * @throws PublishException if it does not within {@code timeout}
     */
    default void check(Duration timeout) {}

    /**
     * Checks that {@code target} (a topic, an exchange) exists, for health endpoints; called
     * after {@link #check} passed. Default: nothing, so health relies on the last publish to it.
     *
     * @throws TargetNotFoundException if the broker says it does not exist
     * @throws PublishException if the broker does not answer within {@code timeout}
     */
    default void checkTarget(String target, Duration timeout) {}

    /** Releases the broker connection if this publisher owns it. */
    @Override
    void close();
}
