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
 * wire. Calls from different workers may overlap.
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
     * waits for confirmations. Default: nothing.
     */
    default void endOfBatch() {}

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
