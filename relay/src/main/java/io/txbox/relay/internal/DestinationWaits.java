package io.txbox.relay.internal;

import io.txbox.internal.Backoff;
import io.txbox.relay.TargetNotFoundException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Destinations whose target the broker says is missing, shared by a relay's workers. While a
 * destination waits, the workers claim none of its rows; when the pause ends, the next batch
 * tries its rows again, and a confirmed publish ends the wait. Pauses grow like the row backoff,
 * capped at {@link TargetNotFoundException#MAX_WAIT_SECONDS}.
 */
final class DestinationWaits {
    private static final Logger log = LoggerFactory.getLogger(DestinationWaits.class);
    private static final Duration MAX_WAIT = Duration.ofSeconds(TargetNotFoundException.MAX_WAIT_SECONDS);

    private record Wait(String reason, int tries, long untilNanos) {}

    private final String relayId;
    private final Backoff backoff;
    private final LongSupplier nanoTime;
    private final Map<String, Wait> waits = new ConcurrentHashMap<>();

    private final RandomGenerator random;

    /** Pauses follow {@code backoff}, capped at {@link #MAX_WAIT}; {@code ticker} tells when a pause ends. */
    DestinationWaits(String relayId, Backoff backoff, LongSupplier ticker, RandomGenerator random) {
        this.relayId = relayId;
        Duration max = backoff.max().compareTo(MAX_WAIT) < 0 ? backoff.max() : MAX_WAIT;
        this.backoff = Backoff.capped(backoff.initial(), max);
        this.nanoTime = ticker;
        this.random = random;
    }

    /** True while {@code destination}'s rows are not to be claimed or sent. */
    boolean paused(String destination) {
        Wait w = waits.get(destination);
        return w != null && w.untilNanos - nanoTime.getAsLong() > 0;
    }

    /** The reason {@code destination} waits, or null. */
    @Nullable String reason(String destination) {
        Wait w = waits.get(destination);
        return w == null ? null : w.reason;
    }

    /** Destinations paused right now, for the claim to skip; usually empty. */
    List<String> paused() {
        if (waits.isEmpty()) {
            return List.of();
        }
        long now = nanoTime.getAsLong();
        List<String> paused = new ArrayList<>();
        waits.forEach((d, w) -> {
            if (w.untilNanos - now > 0) {
                paused.add(d);
            }
        });
        return paused;
    }

    /** Every waiting destination with its reason, sorted. */
    Map<String, String> reasons() {
        Map<String, String> out = new TreeMap<>();
        waits.forEach((d, w) -> out.put(d, w.reason));
        return out;
    }

    /** A try found the target missing: pause the destination for the next, longer step. */
    void missing(String destination, String reason) {
        Wait w = waits.compute(destination, (d, old) -> {
            int tries = old == null ? 1 : old.tries + 1;
            return new Wait(reason, tries, nanoTime.getAsLong() + backoff.delay(tries, random::nextDouble).toNanos());
        });
        if (w.tries == 1) {
            log.warn("{} - destination {} waits: {}", relayId, destination, reason);
        }
    }

    /** A publish to the destination was confirmed, or its target was found: its rows flow again. */
    void found(String destination) {
        Wait w = waits.remove(destination);
        if (w != null) {
            log.info("{} - destination {} reachable again after {} tries", relayId, destination, w.tries);
        }
    }
}
