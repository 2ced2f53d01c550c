package io.txbox.relay.internal;

import io.txbox.relay.TargetNotFoundException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
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

    DestinationWaits(String relayId, Duration initialBackoff, Duration maxBackoff, LongSupplier nanoTime) {
        this.relayId = relayId;
        Duration max = maxBackoff.compareTo(MAX_WAIT) < 0 ? maxBackoff : MAX_WAIT;
        Duration initial = initialBackoff.compareTo(max) < 0 ? initialBackoff : max;
        this.backoff = new Backoff(initial, max, () -> ThreadLocalRandom.current().nextDouble());
        this.nanoTime = nanoTime;
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
            return new Wait(reason, tries, nanoTime.getAsLong() + backoff.delayMillis(tries) * 1_000_000L);
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
