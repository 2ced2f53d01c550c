package io.txbox.inbox.consumer;

import io.txbox.inbox.Outcome;
import io.txbox.inbox.ParkedKeys;
import java.time.Duration;

/**
 * Hears what a consumer does, for metrics. Every method does nothing by default. Called on the
 * consumer's threads: implementations must be fast and thread-safe; an exception they throw is
 * logged and otherwise ignored. {@link io.txbox.inbox.consumer.micrometer.MicrometerConsumerListener} records Micrometer meters
 * (Micrometer is an optional dependency).
 */
public interface ConsumerListener {
    /** No-op listener, the default. */
    ConsumerListener NONE = new ConsumerListener() {};

    /** The inbox transaction for one delivery ended with {@code status} after {@code took}. */
    default void onOutcome(String consumer, Outcome.Status status, Duration took) {}

    /** A delivery will be retried after {@code delay}. */
    default void onRetry(String consumer, Duration delay, String reason) {}

    /** A delivery was sent to the dead-letter destination. */
    default void onDeadLetter(String consumer, String reason) {}

    /** A delivery was acked (RabbitMQ) or its offset committed (Kafka), {@code count} at once. */
    default void onAck(String consumer, int count) {}

    /** The broker or database failed outside the handler; the consumer keeps going. */
    default void onError(String consumer, Throwable error) {}

    /**
     * The consumer's parked ordering keys as just read, every {@code parkedPollInterval}, for a
     * consumer built with {@code parkKeys(true)}.
     */
    default void onParked(String consumer, ParkedKeys.Stats stats) {}
}
