package io.txbox.relay.internal;

import java.time.Duration;
import java.util.function.DoubleSupplier;

/** Exponential backoff with "equal jitter": half the delay fixed, half random. */
final class Backoff {
    private final long initialMillis;
    private final long maxMillis;
    private final DoubleSupplier random;

    Backoff(Duration initial, Duration max, DoubleSupplier random) {
        this.initialMillis = initial.toMillis();
        this.maxMillis = max.toMillis();
        this.random = random;
    }

    /** Delay before attempt {@code failedAttempts + 1}, given {@code failedAttempts} (at least 1) failures so far. */
    long delayMillis(int failedAttempts) {
        int doublings = Math.min(Math.max(failedAttempts - 1, 0), 60);
        long base = (long) Math.min((double) maxMillis, initialMillis * Math.pow(2, doublings));
        long half = base / 2;
        // jitter spreads retries of many rows and relays so a recovering broker isn't hit in step
        return half + (long) (random.getAsDouble() * (base - half + 1));
    }
}
