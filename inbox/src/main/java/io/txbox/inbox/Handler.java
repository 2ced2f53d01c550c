package io.txbox.inbox;

import java.sql.Connection;
import org.jspecify.annotations.Nullable;

/**
 * The business logic {@link Inbox#process} runs for a message's first delivery.
 */
@FunctionalInterface
public interface Handler {
    /**
     * Handles {@code message} inside the transaction {@code tx}, which also holds the inbox
     * entry. Do not commit, roll back or close {@code tx}. On PostgreSQL a failed statement
     * aborts the whole transaction, and its {@code COMMIT} then only rolls back: a handler that
     * catches such an SQLException and returns normally is counted as a failed attempt, never as
     * processed. Let it propagate, or roll back to a savepoint of your own before going on.
     *
     * @return bytes to store and hand back to later duplicate deliveries, or {@code null}
     * @throws Exception to roll back the business writes; the failure is counted and the
     *     message may be delivered again
     */
    byte @Nullable [] handle(Connection tx, InboundMessage message) throws Exception;
}
