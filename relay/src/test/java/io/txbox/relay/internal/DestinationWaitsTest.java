package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.internal.Backoff;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class DestinationWaitsTest {
    final AtomicLong now = new AtomicLong(1_000_000_000L);

    DestinationWaits waits(Duration initial, Duration max) {
        return new DestinationWaits("relay-t", new Backoff(initial, max), now::get, () -> -1L);
    }

    void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void missing_pausesOnlyThatDestination_untilThePauseEnds() {
        DestinationWaits w = waits(Duration.ofMillis(100), Duration.ofSeconds(10));

        w.missing("shipping", "exchange \"x\" does not exist");

        assertThat(w.paused("shipping")).isTrue();
        assertThat(w.paused("billing")).isFalse();
        assertThat(w.paused()).containsExactly("shipping");
        assertThat(w.reasons()).containsEntry("shipping", "exchange \"x\" does not exist");
        advance(Duration.ofMillis(101));
        assertThat(w.paused("shipping")).isFalse();
        assertThat(w.paused()).isEmpty();
        assertThat(w.reason("shipping")).as("still waiting until a publish succeeds").isNotNull();
    }

    @Test
    void missing_repeatedly_pauseGrowsButNeverBeyondThirtySeconds() {
        DestinationWaits w = waits(Duration.ofSeconds(1), Duration.ofMinutes(5));
        for (int i = 0; i < 20; i++) {
            w.missing("shipping", "gone");
        }

        advance(Duration.ofSeconds(30).plusMillis(1));

        assertThat(w.paused("shipping")).isFalse();
    }

    @Test
    void found_endsTheWait() {
        DestinationWaits w = waits(Duration.ofMillis(100), Duration.ofSeconds(1));
        w.missing("shipping", "gone");

        w.found("shipping");

        assertThat(w.paused("shipping")).isFalse();
        assertThat(w.reasons()).isEmpty();
    }
}
