package io.txbox.redis;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.ConfigException;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Redis fast path in Micrometer:
 * <ul>
 *   <li>{@code txbox.redis.answers} (counter), tagged {@code consumer} and {@code answer}:
 *       {@code hit}, {@code in_flight}, {@code miss}, {@code skipped}, {@code error};
 *   <li>{@code txbox.redis.breaker.state} (gauge), tagged {@code consumer}: 0 closed,
 *       1 half-open, 2 open;
 *   <li>{@code txbox.redis.breaker.transitions} (counter), tagged {@code consumer} and
 *       {@code to}: {@code closed}, {@code half_open}, {@code open}.
 * </ul>
 *
 * <pre>{@code HybridInbox.builder(inbox).listener(new MicrometerRedisListener(registry)).build();}</pre>
 *
 * <p>Micrometer is an optional dependency of txbox-redis: only this class needs it.
 */
public final class MicrometerRedisListener implements RedisListener {
    /** Name of the answers counter. */
    public static final String ANSWERS = "txbox.redis.answers";
    /** Name of the breaker state gauge. */
    public static final String BREAKER_STATE = "txbox.redis.breaker.state";
    /** Name of the breaker transitions counter. */
    public static final String BREAKER_TRANSITIONS = "txbox.redis.breaker.transitions";

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> states = new ConcurrentHashMap<>();

    public MicrometerRedisListener(MeterRegistry registry) {
        if (registry == null) {
            throw new ConfigException("registry must not be null");
        }
        this.registry = registry;
    }

    @Override
    public void onAnswer(String consumer, Answer answer) {
        String tag = answer.name().toLowerCase(Locale.ROOT);
        counters.computeIfAbsent(ANSWERS + '\u0000' + consumer + '\u0000' + tag, k -> Counter.builder(ANSWERS)
                        .description("Deliveries by how the Redis fast path answered them")
                        .tag("consumer", consumer)
                        .tag("answer", tag)
                        .register(registry))
                .increment();
    }

    @Override
    public void onBreakerState(String consumer, BreakerState from, BreakerState to) {
        state(consumer).set(switch (to) {
            case CLOSED -> 0;
            case HALF_OPEN -> 1;
            case OPEN -> 2;
        });
        String tag = to.name().toLowerCase(Locale.ROOT);
        counters.computeIfAbsent(BREAKER_TRANSITIONS + '\u0000' + consumer + '\u0000' + tag,
                        k -> Counter.builder(BREAKER_TRANSITIONS)
                                .description("Circuit breaker transitions of the Redis fast path")
                                .tag("consumer", consumer)
                                .tag("to", tag)
                                .register(registry))
                .increment();
    }

    private AtomicInteger state(String consumer) {
        return states.computeIfAbsent(consumer, c -> {
            AtomicInteger s = new AtomicInteger();
            Gauge.builder(BREAKER_STATE, s, AtomicInteger::get)
                    .description("Circuit breaker of the Redis fast path: 0 closed, 1 half-open, 2 open")
                    .tag("consumer", c)
                    .register(registry);
            return s;
        });
    }
}
