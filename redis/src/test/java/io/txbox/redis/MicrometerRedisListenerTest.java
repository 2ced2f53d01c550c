package io.txbox.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class MicrometerRedisListenerTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerRedisListener listener = new MicrometerRedisListener(registry);

    @Test
    void answers_countedPerConsumerAndAnswer() {
        listener.onAnswer("payments", RedisListener.Answer.HIT);
        listener.onAnswer("payments", RedisListener.Answer.HIT);
        listener.onAnswer("payments", RedisListener.Answer.IN_FLIGHT);

        assertThat(registry.get(MicrometerRedisListener.ANSWERS).tag("consumer", "payments").tag("answer", "hit")
                .counter().count()).isEqualTo(2);
        assertThat(registry.get(MicrometerRedisListener.ANSWERS).tag("answer", "in_flight").counter().count())
                .isEqualTo(1);
    }

    @Test
    void breakerTransitions_moveTheGaugeAndAreCounted() {
        listener.onBreakerState("payments", BreakerState.CLOSED, BreakerState.OPEN);
        assertThat(registry.get(MicrometerRedisListener.BREAKER_STATE).tag("consumer", "payments").gauge().value())
                .isEqualTo(2);

        listener.onBreakerState("payments", BreakerState.OPEN, BreakerState.HALF_OPEN);
        listener.onBreakerState("payments", BreakerState.HALF_OPEN, BreakerState.CLOSED);

        assertThat(registry.get(MicrometerRedisListener.BREAKER_STATE).gauge().value()).isZero();
        assertThat(registry.get(MicrometerRedisListener.BREAKER_TRANSITIONS).tag("to", "open").counter().count())
                .isEqualTo(1);
        assertThat(registry.get(MicrometerRedisListener.BREAKER_TRANSITIONS).tag("to", "closed").counter().count())
                .isEqualTo(1);
    }
}
