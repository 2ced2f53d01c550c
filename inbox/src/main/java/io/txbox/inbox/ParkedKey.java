package io.txbox.inbox;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * An ordering key of a consumer that is parked: its messages wait in the inbox, in arrival
 * order, behind the one that went DEAD, until an operator retries or skips it
 * ({@link ParkedKeys}).
 *
 * @param consumer the consumer
 * @param orderingKey the ordering key (a Kafka record key, a RabbitMQ routing key or header)
 * @param deadMessageKey the idempotency key of the message that went DEAD and holds the key, or
 *     {@code null} when it was skipped and the rest wait for their turn
 * @param reason the last error of that message
 * @param messages parked messages of the key, the dead one included
 * @param since when the oldest of them was parked (database time)
 * @param requested a resolution an operator asked the running consumer for, not yet done
 */
public record ParkedKey(String consumer, String orderingKey, @Nullable String deadMessageKey,
        @Nullable String reason, int messages, Instant since, @Nullable Action requested) {

    /** What an operator asks for a parked key. */
    public enum Action {
        /** Run the dead message again, then the others in order. */
        RETRY,
        /** Drop the dead message for good, then run the others in order. */
        SKIP
    }
}
