package io.txbox.inbox.consumer;

import io.txbox.ConfigException;
import io.txbox.internal.Args;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * Exponential backoff with jitter, capped: the delay before the {@code n}-th retry is drawn
 * uniformly from {@code [d/2, d]} where {@code d = min(max, initial * 2^(n-1))}. The jitter
 * spreads retries of many failing messages so they do not hit the database in lockstep.
 *
 * @param initial the delay before the first retry, before jitter; at least 1 ms
 * @param max the cap, before jitter; at least {@code initial}
 */
public record Backoff(Duration initial, Duration max) {
    /** Default {@link #initial}: 1 second. */
    public static final Duration DEFAULT_INITIAL = Duration.ofSeconds(1);
    /** Default {@link #max}: 1 minute. */
    public static final Duration DEFAULT_MAX = Duration.ofMinutes(1);

    public Backoff {
        if (initial == null || initial.compareTo(Duration.ofMillis(1)) < 0) {
            throw new ConfigException("backoff initial must be at least 1 ms, but was " + initial);
        }
        if (max == null || max.compareTo(initial) < 0) {
            throw new ConfigException("backoff max must be at least initial (" + initial + "), but was " + max);
        }
    }

    /** 1 second doubling up to 1 minute. */
    public static Backoff defaults() {
        return new Backoff(DEFAULT_INITIAL, DEFAULT_MAX);
    }

    /** The delay before retry number {@code attempt} (1 for the first retry). */
    public Duration delay(int attempt) {
        return delay(attempt, () -> ThreadLocalRandom.current().nextDouble());
    }

    /** {@link #delay(int)} with the random source given, for tests: values in {@code [0, 1)}. */
    public Duration delay(int attempt, DoubleSupplier random) {
        Args.notNull(random, "random");
        int shift = Math.max(0, Math.min(attempt - 1, 40));
        long initialNanos = initial.toNanos();
        long maxNanos = max.toNanos();
        // Compare before shifting so a large attempt number cannot overflow.
        long capped = initialNanos > (maxNanos >> shift) ? maxNanos : Math.min(maxNanos, initialNanos << shift);
        long half = capped / 2;
        return Duration.ofNanos(half + (long) (random.getAsDouble() * (capped - half)));
    }
}
