package io.txbox.inbox;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * An inbox entry parked after too many failures, as {@link Inbox#listDead} reports it.
 *
 * @param key the message key
 * @param tenant the tenant, if the message had one
 * @param attempts deliveries that reached the handler
 * @param reason the last error recorded
 * @param receivedAt when the key was first received (database time)
 */
public record DeadEntry(String key, @Nullable String tenant, int attempts, @Nullable String reason, Instant receivedAt) {
    public DeadEntry {
        io.txbox.internal.Args.notNull(key, "key");
        io.txbox.internal.Args.notNull(receivedAt, "receivedAt");
    }
}
