package io.txbox.relay.standalone;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Parses the durations of the config file and the CLI: a whole number with a unit ({@code
 * 250ms}, {@code 30s}, {@code 5m}, {@code 12h}, {@code 7d}) or ISO-8601 ({@code PT0.25S},
 * {@code P7D}), or {@code 0}.
 */
public final class Durations {
    private static final Pattern SIMPLE = Pattern.compile("(\\d{1,12})\\s*(ms|s|m|h|d)");

    private Durations() {}

    /**
     * Parses {@code text}.
     *
     * @return the duration, or null if {@code text} is neither form (the caller names the key)
     */
    public static @Nullable Duration parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.equals("0")) {
            return Duration.ZERO;
        }
        Matcher m = SIMPLE.matcher(t);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }
        if (t.startsWith("p")) {
            try {
                return Duration.parse(t.toUpperCase(Locale.ROOT));
            } catch (DateTimeParseException e) {
                return null;
            }
        }
        return null;
    }

    /** {@code 250ms}, {@code 30s}, {@code 7d}: the shortest exact form, for messages and reports. */
    public static String format(Duration d) {
        if (d.isZero()) {
            return "0s";
        }
        long ms = d.toMillis();
        if (d.getNano() % 1_000_000 != 0 || d.isNegative()) {
            return d.toString();
        }
        if (ms % 86_400_000L == 0) {
            return ms / 86_400_000L + "d";
        }
        if (ms % 3_600_000L == 0) {
            return ms / 3_600_000L + "h";
        }
        if (ms % 60_000L == 0) {
            return ms / 60_000L + "m";
        }
        if (ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }
}
