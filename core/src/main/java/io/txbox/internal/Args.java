package io.txbox.internal;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;

/** The one home for null checks on public entry points: each message names what was null. */
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
}
