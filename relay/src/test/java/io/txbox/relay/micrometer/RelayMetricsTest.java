package io.txbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RelayMetricsTest {
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final RelayMetrics metrics = RelayMetrics.of(registry);

    @Test
    void everyMeter_hasADescription() {
        metrics.published("payments", "kafka", 3, Duration.ofMillis(12));
        metrics.failed("payments", "kafka", 1);
        metrics.deadLettered("payments", "kafka", 1);
        metrics.backlog(5, Duration.ofSeconds(2));

        assertThat(registry.getMeters()).extracting(m -> m.getId().getName()).contains(RelayMetrics.BACKLOG,
                RelayMetrics.OLDEST_AGE, RelayMetrics.PUBLISHED, RelayMetrics.FAILED, RelayMetrics.DEAD_LETTERED,
                RelayMetrics.LATENCY);
        for (Meter m : registry.getMeters()) {
            assertThat(m.getId().getDescription()).as(m.getId().getName()).isNotBlank();
        }
    }

    @Test
    void publishLatency_hasHistogramBuckets_soRelaysAggregate() {
        metrics.published("payments", "kafka", 3, Duration.ofMillis(12));
        metrics.published("payments", "kafka", 3, Duration.ofMillis(80));

        var snapshot = registry.get(RelayMetrics.LATENCY).tag("destination", "payments").timer().takeSnapshot();
        assertThat(snapshot.histogramCounts()).isNotEmpty();
        assertThat(snapshot.histogramCounts()).anySatisfy(b -> {
            assertThat(b.bucket(java.util.concurrent.TimeUnit.MILLISECONDS)).isBetween(12.0, 80.0);
            assertThat(b.count()).isEqualTo(1);
        });
    }
}
