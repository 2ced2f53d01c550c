package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Tells the listener each outcome of a chain ({@link DeliveryProcessor#processChained}) as soon
 * as it is known to be committed: when the chain asks about the next message (the round trip
 * that carried the commit came back), or when it returns.
 */
final class ChainReporter {
    private final Clock clock;
    private final BiConsumer<Outcome.Status, Duration> heard;
    private @Nullable Outcome uncommitted;
    private int reported;
    private Instant since;

    ChainReporter(Clock clock, BiConsumer<Outcome.Status, Duration> heard) {
        this.clock = clock;
        this.heard = heard;
        this.since = clock.instant();
    }

    void start() {
        uncommitted = null;
        reported = 0;
        since = clock.instant();
    }

    /** The chain asks about {@code o}: everything before it is committed, and {@code o} too unless PROCESSED. */
    void asked(Outcome o) {
        if (uncommitted != null) {
            report(uncommitted);
            uncommitted = null;
        }
        if (o.status() == Outcome.Status.PROCESSED) {
            uncommitted = o;
        } else {
            report(o);
        }
    }

    void returned(List<Outcome> outcomes) {
        for (int k = reported; k < outcomes.size(); k++) {
            report(outcomes.get(k));
        }
    }

    private void report(Outcome o) {
        Instant now = clock.instant();
        heard.accept(o.status(), Duration.between(since, now));
        since = now;
        reported++;
    }
}
