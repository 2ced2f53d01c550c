package io.txbox.inbox;

/**
 * Hears every inbox outcome, for metrics. Implementations must be fast and thread-safe; an
 * exception they throw is logged and otherwise ignored. Every method does nothing by default.
 *
 * <p>What is reported: {@link Inbox#receive} reports {@code PROCESSED} for a first delivery
 * (before the caller's commit, which the inbox cannot see), or {@code DUPLICATE},
 * {@code IN_FLIGHT}, {@code DEAD}, {@code KEY_REUSED}. {@link Inbox#process} reports its
 * final {@link Outcome}. Two-phase mode reports claims that did not acquire, completions
 * ({@code PROCESSED}) and failures.
 */
public interface InboxListener {
    /** No-op listener, the default. */
    InboxListener NONE = new InboxListener() {};

    /** One delivery of one message ended with {@code status}. */
    default void onOutcome(String consumer, Outcome.Status status) {}
}
