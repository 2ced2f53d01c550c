package io.txbox.relay.micrometer;

import io.txbox.internal.Args;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.txbox.ConfigException;
import io.txbox.relay.RelayListener;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link RelayListener} that records the relay on Micrometer:
 *
 * <ul>
 *   <li>{@value #BACKLOG} (gauge): rows waiting in the outbox, sampled every backlog interval
 *       by the relay (a scrape never queries the database); exact up to 10,000 rows, an
 *       upper-bound estimate from the id span above (see {@link RelayListener#backlog});
 *   <li>{@value #OLDEST_AGE} (gauge, seconds): age of the oldest waiting row;
 *   <li>{@value #PARKED_KEYS} (gauge): routing keys parked at a dead letter, their later rows
 *       waiting until an operator retries or skips it (see {@link RelayListener#parkedKeys});
 *   <li>{@value #PARKED_OLDEST_AGE} (gauge, seconds): how long the longest-parked key has been parked;
 *   <li>{@value #PUBLISHED}, {@value #FAILED}, {@value #DEAD_LETTERED} (counters), tagged
 *       {@code destination} and {@code broker};
 *   <li>{@value #LATENCY} (timer): per batch, from the first send to the last confirmation,
 *       tagged {@code destination} and {@code broker}; it publishes a percentile histogram
 *       (buckets from {@link #LATENCY_MIN} to {@link #LATENCY_MAX}), so a Prometheus query can
 *       add the buckets of many relays and compute one quantile across them
 *       ({@code histogram_quantile(0.99, sum by (le) (rate(txbox_relay_publish_latency_seconds_bucket[5m])))}).
 * </ul>
 *
 * <p>Every meter has a description, which registries that support it (Prometheus's {@code # HELP})
 * publish.
 *
 * <pre>{@code
 * Relay.builder()...listener(RelayMetrics.of(registry)).build();
 * }</pre>
 */
public final class RelayMetrics implements RelayListener {
    public static final String BACKLOG = "txbox.outbox.backlog";
    public static final String OLDEST_AGE = "txbox.outbox.oldest.age";
    public static final String PARKED_KEYS = "txbox.outbox.parked.keys";
    public static final String PARKED_OLDEST_AGE = "txbox.outbox.parked.oldest.age";
    public static final String PUBLISHED = "txbox.relay.published";
    public static final String FAILED = "txbox.relay.failed";
    public static final String DEAD_LETTERED = "txbox.relay.dead_lettered";
    public static final String LATENCY = "txbox.relay.publish.latency";
    /** Lowest bucket of the {@value #LATENCY} histogram: 1 ms. */
    public static final Duration LATENCY_MIN = Duration.ofMillis(1);
    /** Highest bucket of the {@value #LATENCY} histogram: 10 min, the longest publish timeout. */
    public static final Duration LATENCY_MAX = Duration.ofMinutes(10);
    private static final Map<String, String> DESCRIPTIONS = Map.of(
            PUBLISHED, "outbox rows the broker confirmed (and the relay deleted)",
            FAILED, "outbox rows not confirmed in a batch, to be retried (failed attempts, rows held back behind a"
                    + " failed one, rows waiting for a missing target)",
            DEAD_LETTERED, "outbox rows moved to the dead-letter table (no route, refused for good, or out of attempts)");

    private final MeterRegistry registry;
    private final AtomicLong backlog = new AtomicLong();
    private final AtomicLong oldestMillis = new AtomicLong();
    private final AtomicLong parkedKeys = new AtomicLong();
    private final AtomicLong parkedMillis = new AtomicLong();
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();

    private RelayMetrics(MeterRegistry registry) {
        this.registry = registry;
        Gauge.builder(BACKLOG, backlog, AtomicLong::get).description("rows waiting in the outbox").baseUnit("rows")
                .register(registry);
        Gauge.builder(OLDEST_AGE, oldestMillis, a -> a.get() / 1000.0).description("age of the oldest outbox row")
                .baseUnit("seconds").register(registry);
        Gauge.builder(PARKED_KEYS, parkedKeys, AtomicLong::get)
                .description("routing keys parked at a dead letter, their later rows waiting for an operator")
                .baseUnit("keys").register(registry);
        Gauge.builder(PARKED_OLDEST_AGE, parkedMillis, a -> a.get() / 1000.0)
                .description("how long the longest-parked routing key has been parked").baseUnit("seconds")
                .register(registry);
    }

    /** Registers the gauges on {@code registry} and returns the listener to pass to the relay builder. */
    public static RelayMetrics of(MeterRegistry registry) {
        if (registry == null) {
            throw new ConfigException("registry must not be null");
        }
        return new RelayMetrics(registry);
    }

    /**
     * Registers the counters of {@code destination} on {@code broker} at zero, with their
     * descriptions, before its first row: a scrape then shows them and a rate query has a
     * starting point. Optional; the counters are otherwise registered at their first event.
     */
    public void destination(String destination, String broker) {
        for (String name : DESCRIPTIONS.keySet()) {
            counter(name, destination, broker);
        }
    }

    @Override
    public void published(String destination, String broker, int count, Duration latency) {
        Args.notNull(latency, "latency");
        counter(PUBLISHED, destination, broker).increment(count);
        timers.computeIfAbsent(destination + '\0' + broker, k -> Timer.builder(LATENCY)
                .description("first send to last broker confirmation of a batch")
                .tags("destination", destination, "broker", broker)
                .publishPercentileHistogram()
                .minimumExpectedValue(LATENCY_MIN).maximumExpectedValue(LATENCY_MAX)
                .register(registry)).record(latency);
    }

    @Override
    public void failed(String destination, String broker, int count) {
        counter(FAILED, destination, broker).increment(count);
    }

    @Override
    public void deadLettered(String destination, String broker, int count) {
        counter(DEAD_LETTERED, destination, broker).increment(count);
    }

    @Override
    public void backlog(long rows, Duration oldestAge) {
        Args.notNull(oldestAge, "oldestAge");
        backlog.set(rows);
        oldestMillis.set(oldestAge.toMillis());
    }

    @Override
    public void parkedKeys(long keys, Duration oldestAge) {
        Args.notNull(oldestAge, "oldestAge");
        parkedKeys.set(keys);
        parkedMillis.set(oldestAge.toMillis());
    }

    private Counter counter(String name, String destination, String broker) {
        Args.notNull(destination, "destination");
        Args.notNull(broker, "broker");
        return counters.computeIfAbsent(name + '\0' + destination + '\0' + broker, k -> Counter.builder(name)
                .description(DESCRIPTIONS.get(name))
                .tags("destination", destination, "broker", broker).register(registry));
    }
}
