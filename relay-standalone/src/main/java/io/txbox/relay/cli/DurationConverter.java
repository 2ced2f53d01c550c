package io.txbox.relay.cli;

import io.txbox.relay.standalone.Durations;
import java.time.Duration;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** {@code 7d}, {@code 12h}, {@code 30m}, {@code 90s} or ISO-8601 ({@code P7D}); must be positive. */
final class DurationConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        Duration d = Durations.parse(value);
        if (d == null || d.isZero() || d.isNegative()) {
            throw new TypeConversionException("'" + value + "' is not a positive duration like 7d, 12h, 30m, 90s or P7D");
        }
        return d;
    }
}
