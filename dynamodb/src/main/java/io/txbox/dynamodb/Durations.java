package io.txbox.dynamodb;

import io.txbox.ConfigException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

final class Durations {
    private Durations() {}

    static Duration between(String option, @Nullable Duration value, Duration min, Duration max) {
        if (value == null) {
            throw new ConfigException(option + " must not be null");
        }
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new ConfigException(option + " must be between " + min + " and " + max + ", but was " + value);
        }
        return value;
    }
}
