package io.txbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
    void destination_registersItsCountersAtZeroWithTheirDescriptions() {
        metrics.destination("payments", "kafka");
        metrics.published("payments", "kafka", 2, Duration.ofMillis(5));

        for (String name : new String[] {RelayMetrics.PUBLISHED, RelayMetrics.FAILED, RelayMetrics.DEAD_LETTERED}) {
            Meter.Id id = registry.get(name).tags("destination", "payments", "broker", "kafka").counter().getId();
            assertThat(id.getDescription()).as(name).isNotBlank();
        }
        assertThat(registry.get(RelayMetrics.PUBLISHED).counter().count()).isEqualTo(2.0);
        assertThat(registry.get(RelayMetrics.FAILED).counter().count()).isZero();
    }

    @Test
    void publishLatency_publishesHistogramBuckets_soRelaysAggregate() {
        Map<String, DistributionStatisticConfig> configs = new ConcurrentHashMap<>();
        SimpleMeterRegistry seen = new SimpleMeterRegistry();
        seen.config().meterFilter(new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                configs.put(id.getName(), config);
                return config;
            }
        });

        RelayMetrics.of(seen).published("payments", "kafka", 3, Duration.ofMillis(12));

        DistributionStatisticConfig latency = configs.get(RelayMetrics.LATENCY);
        assertThat(latency.isPercentileHistogram()).isTrue();
        assertThat(latency.getMinimumExpectedValueAsDouble()).isEqualTo(RelayMetrics.LATENCY_MIN.toNanos());
        assertThat(latency.getMaximumExpectedValueAsDouble()).isEqualTo(RelayMetrics.LATENCY_MAX.toNanos());
    }
}
