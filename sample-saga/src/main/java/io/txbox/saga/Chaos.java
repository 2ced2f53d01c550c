package io.txbox.saga;

import java.time.Duration;
import java.util.Locale;

/**
 * How much trouble the demo makes for itself. Every figure is a fraction of messages or orders,
 * except the restart interval.
 *
 * @param level 0 (none) to 3 (high)
 * @param retryAfterResponse orders whose client sends the request again after the answer
 * @param retryConcurrently orders whose client sends the same request twice at once
 * @param duplicatePublish messages a relay publishes twice
 * @param gatewayTimeouts gateway calls whose answer is lost after the charge
 * @param restartEvery how often a relay or a consumer of some service is closed and rebuilt;
 *     zero for never
 * @param rewindRecords on a restart of Kafka consumers, how many records per partition their
 *     committed offsets are moved back, as if they had crashed before committing them
 */
public record Chaos(int level, double retryAfterResponse, double retryConcurrently, double duplicatePublish,
        double gatewayTimeouts, Duration restartEvery, int rewindRecords) {

    public static final Chaos NONE = new Chaos(0, 0, 0, 0, 0, Duration.ZERO, 0);
    public static final Chaos LOW = new Chaos(1, 0.03, 0.02, 0.02, 0.01, Duration.ofSeconds(5), 3);
    public static final Chaos MEDIUM = new Chaos(2, 0.07, 0.05, 0.05, 0.02, Duration.ofMillis(1500), 5);
    public static final Chaos HIGH = new Chaos(3, 0.15, 0.10, 0.15, 0.05, Duration.ofSeconds(1), 10);

    /** Parses {@code 0..3} or {@code none|low|medium|high}. */
    public static Chaos parse(String text) {
        switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "0": case "none": case "off": return NONE;
            case "1": case "low": return LOW;
            case "2": case "medium": case "on": return MEDIUM;
            case "3": case "high": return HIGH;
            default:
                throw new IllegalArgumentException("chaos must be 0..3 or none|low|medium|high, but was '" + text + "'");
        }
    }

    public String name() {
        return switch (level) {
            case 0 -> "none";
            case 1 -> "low";
            case 2 -> "medium";
            default -> "high";
        };
    }

    public boolean enabled() {
        return level > 0;
    }
}
