package io.txbox.inbox.consumer.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.internal.Args;
import java.time.Duration;

/**
 * Records a consumer's activity as Micrometer meters, each with a description. Needs {@code io.micrometer:micrometer-core}
 * on the classpath (an optional dependency of txbox-inbox-consumers); nothing else in txbox loads it.
 *
 * <ul>
 *   <li>{@code txbox.consumer.process} (timer): the inbox transaction per delivery, tags
 *       {@code consumer} and {@code status} (processed, duplicate, failed, dead, key_reused, in_flight);
 *   <li>{@code txbox.consumer.retries}, {@code txbox.consumer.dead.letters},
 *       {@code txbox.consumer.acks} (counters), tag {@code consumer};
 *   <li>{@code txbox.consumer.errors} (counter): broker and database failures outside the
 *       handler, tags {@code consumer} and {@code exception} (the class's simple name);
 *   <li>for a consumer built with {@code parkKeys(true)}, gauges read every
 *       {@code parkedPollInterval}, tag {@code consumer}: {@code txbox.consumer.parked.messages}
 *       (parked messages, the dead ones included), {@code txbox.consumer.parked.keys} (parked
 *       ordering keys) and {@code txbox.consumer.parked.oldest.age} (seconds the oldest parked
 *       message has waited; 0 when none).
 * </ul>
 */
public final class MicrometerConsumerListener implements ConsumerListener {
    private final MeterRegistry registry;
    // The last parked stats per consumer, read by the gauges.
    private final java.util.Map<String, java.util.concurrent.atomic.AtomicReference<ParkedKeys.Stats>> parked =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** Registers meters in {@code registry} as they are first needed. */
    public MicrometerConsumerListener(MeterRegistry registry) {
        this.registry = Args.notNull(registry, "registry");
    }

    @Override
    public void onOutcome(String consumer, Outcome.Status status, Duration took) {
        Timer.builder("txbox.consumer.process")
                .description("Inbox transaction per delivery")
                .tag("consumer", consumer)
                .tag("status", status.name().toLowerCase(java.util.Locale.ROOT))
                .register(registry)
                .record(took);
    }

    @Override
    public void onRetry(String consumer, Duration delay, String reason) {
        counter("txbox.consumer.retries", "Deliveries given back to be retried after a backoff", consumer).increment();
    }

    @Override
    public void onDeadLetter(String consumer, String reason) {
        counter("txbox.consumer.dead.letters", "Deliveries sent to the dead-letter destination", consumer)
                .increment();
    }

    @Override
    public void onAck(String consumer, int count) {
        counter("txbox.consumer.acks", "Deliveries acked or offsets committed after the database commit", consumer)
                .increment(count);
    }

    @Override
    public void onError(String consumer, Throwable error) {
        Counter.builder("txbox.consumer.errors")
                .description("Broker and database failures outside the handler; the consumer kept going")
                .tag("consumer", consumer)
                .tag("exception", error.getClass().getSimpleName()).register(registry).increment();
    }

    @Override
    public void onParked(String consumer, ParkedKeys.Stats stats) {
        parked.computeIfAbsent(consumer, c -> {
            java.util.concurrent.atomic.AtomicReference<ParkedKeys.Stats> last =
                    new java.util.concurrent.atomic.AtomicReference<>(stats);
            Gauge.builder("txbox.consumer.parked.messages", last, r -> r.get().messages())
                    .description("Messages parked behind a dead message of their ordering key").tag("consumer", c)
                    .register(registry);
            Gauge.builder("txbox.consumer.parked.keys", last, r -> r.get().keys())
                    .description("Ordering keys parked behind a dead message").tag("consumer", c).register(registry);
            Gauge.builder("txbox.consumer.parked.oldest.age", last, r -> r.get().oldestAge().toMillis() / 1000.0)
                    .description("How long the oldest parked message has waited").baseUnit("seconds")
                    .tag("consumer", c).register(registry);
            return last;
        }).set(stats);
    }

    private Counter counter(String name, String description, String consumer) {
        return Counter.builder(name).description(description).tag("consumer", consumer).register(registry);
    }
}
