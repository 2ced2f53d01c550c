package io.txbox.inbox.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.ConfigException;
import io.txbox.inbox.InboxListener;
import io.txbox.inbox.Outcome;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts inbox outcomes in Micrometer as {@code txbox.inbox.outcomes}, tagged {@code consumer}
 * and {@code outcome}: {@code first}, {@code duplicate}, {@code failed}, {@code dead},
 * {@code mismatch} (same key, different payload) or {@code in_flight}.
 *
 * <pre>{@code Inbox.builder("payments").listener(new MicrometerInboxListener(registry)).build();}</pre>
 *
 * <p>Micrometer is an optional dependency of txbox-inbox: only this class needs it, so an inbox
 * built without it never loads a Micrometer class.
 */
public final class MicrometerInboxListener implements InboxListener {
    /** Name of the counter. */
    public static final String OUTCOMES = "txbox.inbox.outcomes";

    private final MeterRegistry registry;
    // one lookup per (consumer, outcome) instead of one per delivery
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();

    public MicrometerInboxListener(MeterRegistry registry) {
        if (registry == null) {
            throw new ConfigException("registry must not be null");
        }
        this.registry = registry;
    }

    @Override
    public void onOutcome(String consumer, Outcome.Status status) {
        String outcome = outcomeTag(status);
        counters.computeIfAbsent(consumer + '\u0000' + outcome, k -> Counter.builder(OUTCOMES)
                        .description("Inbox deliveries by outcome")
                        .tag("consumer", consumer)
                        .tag("outcome", outcome)
                        .register(registry))
                .increment();
    }

    static String outcomeTag(Outcome.Status status) {
        return switch (status) {
            case PROCESSED -> "first";
            case KEY_REUSED -> "mismatch";
            default -> status.name().toLowerCase(Locale.ROOT);
        };
    }
}
