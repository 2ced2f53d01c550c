package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
    static final Backoff BACKOFF = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10));

    @Test
    void delay_doublesPerAttempt_withinHalfJitter() {
        assertThat(BACKOFF.delayMillis(1, () -> 0.0)).isEqualTo(50);
        assertThat(BACKOFF.delayMillis(1, () -> 0.999999)).isEqualTo(100);
        assertThat(BACKOFF.delayMillis(3, () -> 0.0)).isEqualTo(200);
        assertThat(BACKOFF.delayMillis(3, () -> 0.999999)).isEqualTo(400);
    }

    @Test
    void delay_cappedAtMax_evenForHugeAttemptCounts() {
        assertThat(BACKOFF.delayMillis(1_000_000, () -> 0.999999)).isEqualTo(10_000);
        assertThat(BACKOFF.delayMillis(40, () -> 0.999999)).isEqualTo(10_000);
        assertThat(BACKOFF.delay(Integer.MAX_VALUE, () -> 0.0)).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void delay_attemptBelowOne_countsAsTheFirstRetry() {
        assertThat(BACKOFF.delay(0, () -> 0.0)).isEqualTo(BACKOFF.delay(1, () -> 0.0));
        assertThat(BACKOFF.delay(-5, () -> 0.5)).isEqualTo(BACKOFF.delay(1, () -> 0.5));
    }

    @Test
    void delay_nanosecondResolution_forSubMillisecondSteps() {
        Backoff b = new Backoff(Duration.ofMillis(1), Duration.ofMillis(1));
        assertThat(b.delay(1, () -> 0.5)).isEqualTo(Duration.ofNanos(750_000));
    }

    @Test
    void capped_initialAboveMax_lowersInitialToMax() {
        assertThat(Backoff.capped(Duration.ofMinutes(1), Duration.ofSeconds(30)))
                .isEqualTo(new Backoff(Duration.ofSeconds(30), Duration.ofSeconds(30)));
        assertThat(Backoff.capped(Duration.ofSeconds(1), Duration.ofSeconds(30)).initial()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void new_initialBelowOneMillisecond_rejectedNamingIt() {
        assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("initial").hasMessageContaining("PT0S");
        assertThatThrownBy(() -> new Backoff(null, Duration.ofSeconds(1))).isInstanceOf(ConfigException.class);
    }

    @Test
    void new_maxBelowInitial_rejectedNamingBoth() {
        assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("PT2S").hasMessageContaining("PT1S");
    }
}
