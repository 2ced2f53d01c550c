package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
    @Test
    void delay_doublesPerAttempt_withinHalfJitter() {
        Backoff low = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10), () -> 0.0);
        Backoff high = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10), () -> 0.999999);
        assertThat(low.delayMillis(1)).isEqualTo(50);
        assertThat(high.delayMillis(1)).isEqualTo(100);
        assertThat(low.delayMillis(3)).isEqualTo(200);
        assertThat(high.delayMillis(3)).isEqualTo(400);
    }

    @Test
    void delay_cappedAtMax_evenForHugeAttemptCounts() {
        Backoff high = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10), () -> 0.999999);
        assertThat(high.delayMillis(1_000_000)).isEqualTo(10_000);
        assertThat(high.delayMillis(40)).isEqualTo(10_000);
    }
}
