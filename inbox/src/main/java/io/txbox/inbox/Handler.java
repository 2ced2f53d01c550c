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
     * entry. Do not commit, roll back or close {@code tx}.
     *
     * @return bytes to store and hand back to later duplicate deliveries, or {@code null}
     * @throws Exception to roll back the business writes; the failure is counted and the
     *     message may be delivered again
     */
    byte @Nullable [] handle(Connection tx, InboundMessage message) throws Exception;
}
