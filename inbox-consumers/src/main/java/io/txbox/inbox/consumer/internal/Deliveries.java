package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Outcome;
import org.jspecify.annotations.Nullable;

/**
 * How a consumer runs one delivery's message, in its mode: in an inbox transaction
 * ({@link AtomicDeliveries}) or under a two-phase claim ({@link TwoPhaseDeliveries}).
 */
sealed interface Deliveries permits AtomicDeliveries, TwoPhaseDeliveries {
    /**
     * Runs {@code message} start to end; {@code orderingKey} is set when the consumer parks keys.
     *
     * @throws io.txbox.InvalidInputException if the inbox refuses the message
     * @throws RuntimeException if the database or the store failed; nothing was completed
     */
    Outcome run(InboundMessage message, @Nullable String orderingKey);
}
