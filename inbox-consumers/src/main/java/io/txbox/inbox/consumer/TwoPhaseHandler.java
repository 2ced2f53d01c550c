package io.txbox.inbox.consumer;

import io.txbox.inbox.InboundMessage;
import org.jspecify.annotations.Nullable;

/**
 * The work of a consumer that keeps no database transaction around it, run under a two-phase
 * claim of a {@link io.txbox.inbox.TwoPhaseStore} (the database inbox's two-phase mode, or a
 * Redis store): claim, this handler, then complete on success or fail on an exception, and only
 * then the ack or offset commit. For side effects outside any database (a payment gateway, an
 * e-mail). If the process dies after the work and before the completion, the lease runs out and
 * the next delivery runs the work again: make it idempotent on the far side (pass the key on)
 * when that matters.
 */
@FunctionalInterface
public interface TwoPhaseHandler {
    /**
     * Does the work for {@code message}.
     *
     * @return bytes to store with the completion and hand back to later duplicates, or {@code null}
     * @throws Exception to fail the claim; the failure is counted and the message delivered
     *     again after the backoff, or dead-lettered once the store's {@code maxAttempts} is reached
     */
    byte @Nullable [] handle(InboundMessage message) throws Exception;
}
