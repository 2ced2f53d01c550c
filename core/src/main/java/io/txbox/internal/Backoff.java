package io.txbox.internal;

import io.txbox.ConfigException;
import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * The one exponential backoff with "equal jitter" txbox uses for retries (relay rows, paused
 * relay destinations, consumer redeliveries): the delay before retry {@code n} is drawn from
 * {@code [d/2, d]} where {@code d = min(max, initial * 2^(n-1))}. Half the delay is fixed, so a
 * retry never comes early; the random half spreads the retries of many rows, relays or
 * consumers so a recovering broker or database is not hit in step. The random source is a
 * parameter, so tests pass a constant.
 *
 * @param initial the delay before the first retry, before jitter; at least 1 ms
 * @param max the cap, before jitter; at least {@code initial}
 */
public record Backoff(Duration initial, Duration max) {
    /** Doublings beyond this change nothing: 2^40 ms is decades. */
    private static final int MAX_SHIFT = 40;

    public Backoff {
        if (initial == null || initial.compareTo(Duration.ofMillis(1)) < 0) {
            throw new ConfigException("backoff initial must be at least 1 ms, but was " + initial);
        }
        if (max == null || max.compareTo(initial) < 0) {
            throw new ConfigException("backoff max must be at least initial (" + initial + "), but was " + max);
        }
    }

    /**
     * The backoff for {@code initial} and {@code max} with {@code initial} lowered to {@code
     * max} when it is larger: for a pause whose cap is narrower than the configured backoff.
     */
    public static Backoff capped(Duration initial, Duration max) {
        return new Backoff(initial.compareTo(max) < 0 ? initial : max, max);
    }

    /**
     * The delay before retry number {@code attempt} (1 for the first retry; smaller values count
     * as 1), with {@code random} giving values in {@code [0, 1)}.
     */
    public Duration delay(int attempt, DoubleSupplier random) {
        int shift = Math.max(0, Math.min(attempt - 1, MAX_SHIFT));
        long initialNanos = initial.toNanos();
        long maxNanos = max.toNanos();
        // compared before shifting, so a large attempt number cannot overflow
        long capped = initialNanos > (maxNanos >> shift) ? maxNanos : Math.min(maxNanos, initialNanos << shift);
        long half = capped / 2;
        return Duration.ofNanos(half + (long) (random.getAsDouble() * (capped - half)));
    }

    /** {@link #delay} in whole milliseconds, rounded up, for SQL that counts milliseconds. */
    public long delayMillis(int attempt, DoubleSupplier random) {
        long nanos = delay(attempt, random).toNanos();
        return (nanos + 999_999) / 1_000_000;
    }
}
