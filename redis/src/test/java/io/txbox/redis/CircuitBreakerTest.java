package io.txbox.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CircuitBreakerTest {
    private final MutableClock clock = new MutableClock();
    private final List<String> moves = new ArrayList<>();
    private final CircuitBreaker breaker = new CircuitBreaker(3, Duration.ofSeconds(5), clock,
            (from, to) -> moves.add(from + "->" + to));

    @Test
    void failuresBelowThreshold_stayClosed_andASuccessResetsTheCount() {
        breaker.failure();
        breaker.failure();
        breaker.success();
        breaker.failure();
        breaker.failure();

        assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
        assertThat(breaker.allow()).isTrue();
        assertThat(moves).isEmpty();
    }

    @Test
    void thresholdFailuresInARow_open_andNoCallIsAllowedUntilOpenForHasPassed() {
        fail(3);

        assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
        assertThat(breaker.allow()).isFalse();
        clock.advance(Duration.ofMillis(4999));
        assertThat(breaker.allow()).isFalse();
        assertThat(moves).containsExactly("CLOSED->OPEN");
    }

    @Test
    void afterOpenFor_exactlyOneProbe_successCloses() {
        fail(3);
        clock.advance(Duration.ofSeconds(5));

        assertThat(breaker.allow()).isTrue();
        assertThat(breaker.allow()).as("a second caller while the probe runs").isFalse();
        breaker.success();

        assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
        assertThat(breaker.allow()).isTrue();
        assertThat(moves).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED");
    }

    @Test
    void failedProbe_opensAgainForAnotherOpenFor() {
        fail(3);
        clock.advance(Duration.ofSeconds(5));
        assertThat(breaker.allow()).isTrue();
        breaker.failure();

        assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
        assertThat(breaker.allow()).isFalse();
        clock.advance(Duration.ofSeconds(5));
        assertThat(breaker.allow()).isTrue();
        assertThat(moves).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->OPEN", "OPEN->HALF_OPEN");
    }

    @Test
    void lateSuccessOfACallStartedBeforeOpening_doesNotCloseTheBreaker() {
        fail(3);
        breaker.success();

        assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
    }

    private void fail(int n) {
        for (int i = 0; i < n; i++) {
            breaker.failure();
        }
    }
}
