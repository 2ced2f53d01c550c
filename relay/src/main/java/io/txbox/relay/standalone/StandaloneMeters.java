package io.txbox.relay.standalone;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.txbox.relay.RelayListener;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The relay's meters as DESIGN.md lists them, for the standalone process, until the relay
 * library's {@code io.txbox.relay.micrometer.RelayMetrics} exists:
 * {@code txbox.relay.published}, {@code txbox.relay.failed}, {@code txbox.relay.dead_lettered}
 * (counters tagged destination and broker), {@code txbox.relay.publish.latency} (timer), and the
 * gauges {@code txbox.outbox.backlog} and {@code txbox.outbox.oldest_pending_age} (seconds).
 */
final class StandaloneMeters implements RelayListener {
    private final MeterRegistry registry;
    private final AtomicLong backlogRows = new AtomicLong();
    private final AtomicLong oldestMillis = new AtomicLong();

    StandaloneMeters(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder("txbox.outbox.backlog", backlogRows, AtomicLong::get)
                .description("rows waiting in the outbox, including delayed and backing-off ones")
                .baseUnit("rows").register(registry);
        Gauge.builder("txbox.outbox.oldest_pending_age", oldestMillis, v -> v.get() / 1000.0)
                .description("age of the oldest outbox row, by the database clock")
                .baseUnit("seconds").register(registry);
    }

    @Override
    public void published(String destination, String broker, int count, Duration latency) {
        counter("txbox.relay.published", "rows confirmed by the broker and deleted", destination, broker).increment(count);
        Timer.builder("txbox.relay.publish.latency")
                .description("from the first send of a batch to its last confirmation")
                .tags("destination", destination, "broker", broker)
                .register(registry).record(latency);
    }

    @Override
    public void failed(String destination, String broker, int count) {
        counter("txbox.relay.failed", "publish attempts that failed and will be retried", destination, broker).increment(count);
    }

    @Override
    public void deadLettered(String destination, String broker, int count) {
        counter("txbox.relay.dead_lettered", "rows moved to the dead-letter table", destination, broker).increment(count);
    }

    @Override
    public void backlog(long rows, Duration oldestAge) {
        backlogRows.set(rows);
        oldestMillis.set(oldestAge.toMillis());
    }

    /** Registers the published counter of a destination at zero, so a scrape shows it before the first row. */
    void expect(String destination, String broker) {
        counter("txbox.relay.published", "rows confirmed by the broker and deleted", destination, broker);
        counter("txbox.relay.failed", "publish attempts that failed and will be retried", destination, broker);
        counter("txbox.relay.dead_lettered", "rows moved to the dead-letter table", destination, broker);
    }

    private Counter counter(String name, String description, String destination, String broker) {
        return Counter.builder(name).description(description)
                .tags("destination", destination, "broker", broker).register(registry);
    }
}
