package io.txbox.inbox.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
    private final Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1));

    @Test
    void delay_doublesPerAttempt_withinJitterBand() {
        assertThat(backoff.delay(1, () -> 0.0)).isEqualTo(Duration.ofMillis(50));
        assertThat(backoff.delay(1, () -> 0.999999)).isBetween(Duration.ofMillis(99), Duration.ofMillis(100));
        assertThat(backoff.delay(3, () -> 0.0)).isEqualTo(Duration.ofMillis(200));
        assertThat(backoff.delay(3, () -> 0.5)).isEqualTo(Duration.ofMillis(300));
    }

    @Test
    void delay_cappedAtMax_evenForHugeAttemptNumbers() {
        assertThat(backoff.delay(5, () -> 0.999999)).isLessThanOrEqualTo(Duration.ofSeconds(1));
        assertThat(backoff.delay(5, () -> 0.0)).isEqualTo(Duration.ofMillis(500));
        assertThat(backoff.delay(Integer.MAX_VALUE, () -> 0.0)).isEqualTo(Duration.ofMillis(500));
    }

    @Test
    void delay_zeroOrNegativeAttempt_treatedAsFirst() {
        assertThat(backoff.delay(0, () -> 0.0)).isEqualTo(Duration.ofMillis(50));
    }

    @Test
    void new_initialBelowOneMillisecond_rejectedNamingValue() {
        assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("initial").hasMessageContaining("PT0S");
    }

    @Test
    void new_maxBelowInitial_rejectedNamingValue() {
        assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("max").hasMessageContaining("PT1S");
    }
}
