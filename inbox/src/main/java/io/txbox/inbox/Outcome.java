package io.txbox.inbox;

import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How one delivery ended, as reported by {@link Inbox#process} and {@link Inbox#recordFailure}.
 * A consumer acks when {@link #isFinal()}; it dead-letters as well for {@link Status#DEAD}
 * and {@link Status#KEY_REUSED}, and redelivers later for {@link Status#FAILED} and
 * {@link Status#IN_FLIGHT}.
 *
 * @param status see {@link Status}
 * @param result for PROCESSED: what the handler returned; for DUPLICATE: the stored result.
 *     Not copied; do not change it
 * @param attempts deliveries of this key that reached the handler so far
 * @param reason for FAILED, DEAD and KEY_REUSED: why, in words (error class and message)
 * @param error for FAILED and DEAD in this delivery: what the handler threw
 */
public record Outcome(
        Status status, byte @Nullable [] result, int attempts, @Nullable String reason, @Nullable Throwable error) {

    /** How a delivery ended. */
    public enum Status {
        /** The handler ran and its transaction committed. */
        PROCESSED,
        /** An earlier delivery had completed; nothing ran. */
        DUPLICATE,
        /** The handler failed; the business writes were rolled back and the attempt counted. */
        FAILED,
        /** The key failed {@code maxAttempts} times and is parked for an operator. */
        DEAD,
        /** The key was seen before with a different payload fingerprint; nothing ran. */
        KEY_REUSED,
        /** A two-phase worker holds a live lease on the key; nothing ran. */
        IN_FLIGHT
    }

    public Outcome {
        io.txbox.internal.Args.notNull(status, "status");
    }

    /**
     * {@code true} when the message needs no further delivery, so the consumer may ack it:
     * PROCESSED, DUPLICATE, DEAD and KEY_REUSED.
     */
    public boolean isFinal() {
        return status != Status.FAILED && status != Status.IN_FLIGHT;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Outcome r && status == r.status && Arrays.equals(result, r.result)
                && attempts == r.attempts && Objects.equals(reason, r.reason) && Objects.equals(error, r.error);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, Arrays.hashCode(result), attempts, reason, error);
    }

    @Override
    public String toString() {
        return "Outcome[" + status + ", attempts=" + attempts
                + (result == null ? "" : ", result=" + result.length + " bytes")
                + (reason == null ? "" : ", reason=" + reason) + "]";
    }
}
