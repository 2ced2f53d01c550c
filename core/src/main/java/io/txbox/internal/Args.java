package io.txbox.internal;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** The one home for argument checks on public entry points: each message names what was wrong and the value. */
public final class Args {
    private Args() {}

    /**
     * Returns {@code value}, or throws {@link InvalidInputException} naming the method parameter
     * when it is null. Call it before any I/O.
     */
    public static <T> T notNull(T value, String parameter) {
        if (value == null) {
            throw new InvalidInputException(parameter + " must not be null");
        }
        return value;
    }

    /** Returns {@code value}, or throws {@link ConfigException} naming the builder property when it is null. */
    public static <T> T configured(T value, String property) {
        if (value == null) {
            throw new ConfigException(property + " must not be null");
        }
        return value;
    }

    /** Returns {@code value}, or throws {@link ConfigException} naming the builder property when it is below {@code min}. */
    public static int atLeast(int value, int min, String property) {
        if (value < min) {
            throw new ConfigException(property + " must be at least " + min + ", but was " + value);
        }
        return value;
    }

    /** Returns {@code value}, or throws {@link ConfigException} naming the builder property when it is outside [min, max]. */
    public static int between(int value, int min, int max, String property) {
        if (value < min || value > max) {
            throw new ConfigException(property + " must be between " + min + " and " + max + ", but was " + value);
        }
        return value;
    }

    /** Returns {@code value}, or throws {@link ConfigException} naming the builder property when it is null or outside [min, max]. */
    public static Duration between(@Nullable Duration value, Duration min, Duration max, String property) {
        if (value == null) {
            throw new ConfigException(property + " must not be null");
        }
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new ConfigException(property + " must be between " + min + " and " + max + ", but was " + value);
        }
        return value;
    }
}
