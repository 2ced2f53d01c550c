package io.txbox.redis;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Counts consecutive Redis failures; at {@code threshold} it opens and lets no call through for
 * {@code openFor} (measured on {@code clock}), then lets one probe through (half-open): success
 * closes it, failure opens it again. Thread-safe.
 */
final class CircuitBreaker {
    private final int threshold;
    private final Duration openFor;
    private final Clock clock;
    private final BiConsumer<BreakerState, BreakerState> onChange;

    private BreakerState state = BreakerState.CLOSED;
    private int failures;
    private @Nullable Instant openUntil;

    CircuitBreaker(int threshold, Duration openFor, Clock clock, BiConsumer<BreakerState, BreakerState> onChange) {
        this.threshold = threshold;
        this.openFor = openFor;
        this.clock = clock;
        this.onChange = onChange;
    }

    /** Whether a call may go to Redis now. In HALF_OPEN only one caller (the probe) gets {@code true}. */
    boolean allow() {
        BreakerState from;
        synchronized (this) {
            if (state == BreakerState.CLOSED) {
                return true;
            }
            if (state == BreakerState.HALF_OPEN || clock.instant().isBefore(openUntil)) {
                return false;
            }
            from = state;
            state = BreakerState.HALF_OPEN;
        }
        onChange.accept(from, BreakerState.HALF_OPEN);
        return true;
    }

    void success() {
        BreakerState from;
        synchronized (this) {
            failures = 0;
            // Only the probe closes an open breaker: a call that started before it opened proves nothing.
            if (state != BreakerState.HALF_OPEN) {
                return;
            }
            from = state;
            state = BreakerState.CLOSED;
            openUntil = null;
        }
        onChange.accept(from, BreakerState.CLOSED);
    }

    void failure() {
        BreakerState from;
        synchronized (this) {
            failures++;
            if (state == BreakerState.OPEN || (state == BreakerState.CLOSED && failures < threshold)) {
                return;
            }
            from = state;
            state = BreakerState.OPEN;
            openUntil = clock.instant().plus(openFor);
        }
        onChange.accept(from, BreakerState.OPEN);
    }

    synchronized BreakerState state() {
        return state;
    }
}
