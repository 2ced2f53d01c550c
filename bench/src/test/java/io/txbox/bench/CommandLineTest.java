package io.txbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code bench/run}'s command line: help that lists what a run understands, usage errors as exit code 64. */
class CommandLineTest {
    private final ByteArrayOutputStream buf = new ByteArrayOutputStream();

    private int run(String... args) {
        try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            return Main.run(args, out);
        }
    }

    @Test
    void help_listsEveryScenario() {
        assertThat(run("--help")).isZero();
        assertThat(buf.toString(StandardCharsets.UTF_8)).contains(Main.SCENARIOS.keySet());
    }

    @Test
    void scenarioHelp_listsItsOptionsWithDefaults() {
        assertThat(run("relay-kafka", "--help")).isZero();
        assertThat(buf.toString(StandardCharsets.UTF_8)).contains("--rows", "(default: 200000)", "--workers", "--kafka",
                "--no-html", "--strict-fencing");
    }

    @Test
    void unknownOption_isAUsageError() {
        assertThat(run("relay-kafka", "--rowz", "10")).isEqualTo(64);
    }

    @Test
    void unknownScenario_isAUsageError() {
        assertThat(run("relay-kafkaa")).isEqualTo(64);
    }

    @Test
    void badValue_isAUsageError() {
        assertThat(run("relay-kafka", "--mode", "sideways")).isEqualTo(64);
    }
}
