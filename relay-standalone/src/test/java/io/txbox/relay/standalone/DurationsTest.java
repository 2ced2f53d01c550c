package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {
    @Test
    void parse_unitsAndIso() {
        assertThat(Durations.parse("250ms")).isEqualTo(Duration.ofMillis(250));
        assertThat(Durations.parse("30s")).isEqualTo(Duration.ofSeconds(30));
        assertThat(Durations.parse("30m")).isEqualTo(Duration.ofMinutes(30));
        assertThat(Durations.parse("12h")).isEqualTo(Duration.ofHours(12));
        assertThat(Durations.parse("7d")).isEqualTo(Duration.ofDays(7));
        assertThat(Durations.parse("PT0.25S")).isEqualTo(Duration.ofMillis(250));
        assertThat(Durations.parse("p7d")).isEqualTo(Duration.ofDays(7));
    }

    @Test
    void parse_garbage_isNull() {
        assertThat(Durations.parse("fast")).isNull();
        assertThat(Durations.parse("-5s")).isNull();
        assertThat(Durations.parse("5 weeks")).isNull();
        assertThat(Durations.parse("P")).isNull();
    }

    @Test
    void format_shortestExactForm() {
        assertThat(Durations.format(Duration.ofDays(7))).isEqualTo("7d");
        assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
        assertThat(Durations.format(Duration.ofSeconds(90))).isEqualTo("90s");
        assertThat(Durations.format(Duration.ZERO)).isEqualTo("0s");
    }
}
