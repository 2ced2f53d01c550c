package io.txbox.relay;

import io.txbox.internal.Args;
import org.jspecify.annotations.Nullable;

/**
 * The broker says a route's target does not exist: a RabbitMQ exchange that was never declared
 * (channel error 404 NOT_FOUND). The condition belongs to the destination, not to a message, so
 * the relay neither counts an attempt nor dead-letters the rows: they wait in the outbox, in
 * order, and no other destination is held up. The relay skips the destination's rows when it
 * claims, tries one batch again after a pause that grows from the initial backoff to at most
 * the maximum backoff and never beyond {@link #MAX_WAIT_SECONDS} seconds, and the rows are
 * published as soon as a try succeeds. While the destination waits, {@link Relay#health}
 * reports it DOWN with this message, and {@link RelayStatus#waitingDestinations()} lists it.
 *
 * <p>A {@link Publisher} completes a publish stage, or fails {@link Publisher#checkTarget}, with
 * this exception to say so.
 */
public class TargetNotFoundException extends PublishException {
    private static final long serialVersionUID = 1L;
    /** Longest pause between two tries of a destination whose target is missing: {@value} s. */
    public static final int MAX_WAIT_SECONDS = 30;

    private final String target;

    /**
     * @param target the topic or exchange that does not exist
     * @param message what the broker said and what to do
     */
    public TargetNotFoundException(String target, String message, @Nullable Throwable cause) {
        super(message, cause, true);
        this.target = Args.notNull(target, "target");
    }

    /** The topic or exchange that does not exist. */
    public String target() {
        return target;
    }
}
