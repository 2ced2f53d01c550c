package io.txbox.inbox.consumer.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.inbox.Outcome;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MicrometerConsumerListenerTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerConsumerListener listener = new MicrometerConsumerListener(registry);

    @Test
    void events_recordedAsTaggedMeters() {
        listener.onOutcome("payments", Outcome.Status.PROCESSED, Duration.ofMillis(5));
        listener.onOutcome("payments", Outcome.Status.DUPLICATE, Duration.ofMillis(1));
        listener.onRetry("payments", Duration.ofSeconds(1), "boom");
        listener.onDeadLetter("payments", "dead");
        listener.onAck("payments", 3);
        listener.onError("payments", new IllegalStateException());

        assertThat(registry.get("txbox.consumer.process").tag("status", "processed").timer().count()).isEqualTo(1);
        assertThat(registry.get("txbox.consumer.process").tag("status", "duplicate").timer().count()).isEqualTo(1);
        assertThat(registry.get("txbox.consumer.retries").tag("consumer", "payments").counter().count()).isEqualTo(1);
        assertThat(registry.get("txbox.consumer.dead.letters").counter().count()).isEqualTo(1);
        assertThat(registry.get("txbox.consumer.acks").counter().count()).isEqualTo(3);
        assertThat(registry.get("txbox.consumer.errors").tag("exception", "IllegalStateException").counter().count())
                .isEqualTo(1);
    }

    @Test
    void everyMeter_hasADescription() {
        listener.onOutcome("payments", Outcome.Status.PROCESSED, Duration.ofMillis(5));
        listener.onRetry("payments", Duration.ofSeconds(1), "boom");
        listener.onDeadLetter("payments", "dead");
        listener.onAck("payments", 1);
        listener.onError("payments", new IllegalStateException());

        assertThat(registry.getMeters()).hasSize(5)
                .allSatisfy(m -> assertThat(m.getId().getDescription()).as(m.getId().getName()).isNotBlank());
    }
}
