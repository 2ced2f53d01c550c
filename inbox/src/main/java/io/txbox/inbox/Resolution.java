package io.txbox.inbox;

import org.jspecify.annotations.Nullable;

/**
 * What resolving a parked key did ({@link ParkedKeys#retry}, {@link ParkedKeys#skip}).
 *
 * @param orderingKey the key
 * @param ran parked messages run through the handler and committed (or found done already)
 * @param skipped dead messages dropped (0 or 1)
 * @param released whether the key has no parked message left, so its new messages run at once
 * @param stoppedAt the idempotency key of the message that failed again and now holds the key,
 *     or {@code null} when released
 * @param reason why it failed, or {@code null}
 */
public record Resolution(String orderingKey, int ran, int skipped, boolean released, @Nullable String stoppedAt,
        @Nullable String reason) {}
