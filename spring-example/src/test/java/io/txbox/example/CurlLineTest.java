package io.txbox.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The docs' curl lines are read as curl reads them, and every one of them is among those that
 * {@link OrdersApplicationIT} sends to the running example.
 */
class CurlLineTest {
    static final Path ROOT = Path.of("..");
    /** The Markdown files whose curl lines OrdersApplicationIT runs against the example. */
    static final List<Path> RUN = List.of(Path.of("spring-example", "README.md"), Path.of("spring-boot-starter", "README.md"));

    @Test
    void dashD_withoutContentType_sendsAFormPostWithCurlsDefaultHeaders() {
        CurlLine line = CurlLine.parse("curl -i localhost:8080/refunds -H 'Idempotency-Key: refund-42' -d order-42  # note");

        assertThat(line.method()).isEqualTo("POST");
        assertThat(line.target()).isEqualTo("/refunds");
        assertThat(line.data()).isEqualTo("order-42");
        assertThat(line.headers()).containsExactly(Map.entry("User-Agent", CurlLine.USER_AGENT), Map.entry("Accept", "*/*"),
                Map.entry("Content-Type", "application/x-www-form-urlencoded"), Map.entry("Idempotency-Key", "refund-42"));
    }

    @Test
    void dashH_contentType_replacesTheFormType_andDashXTheMethod() {
        CurlLine line = CurlLine.parse("curl -X PUT http://localhost:8080/orders/order-42 -H \"content-type: text/plain\" -d 42.00");

        assertThat(line.method()).isEqualTo("PUT");
        assertThat(line.target()).isEqualTo("/orders/order-42");
        assertThat(line.headers()).containsExactly(Map.entry("User-Agent", CurlLine.USER_AGENT), Map.entry("Accept", "*/*"),
                Map.entry("content-type", "text/plain"));
    }

    @Test
    void optionsTheTestDoesNotSend_areRefused() {
        assertThatThrownBy(() -> CurlLine.parse("curl --json '{}' localhost:8080/refunds"))
                .hasMessageContaining("--json");
        assertThatThrownBy(() -> CurlLine.parse("curl -d @body.txt localhost:8080/refunds"))
                .hasMessageContaining("@file");
        assertThatThrownBy(() -> CurlLine.parse("curl -d \"$BODY\" localhost:8080/refunds"))
                .hasMessageContaining("expansions");
    }

    @Test
    void everyCurlLineOfTheProjectsMarkdown_isInAFileTheExampleRuns() throws IOException {
        List<Path> withCurl;
        try (Stream<Path> files = Files.walk(ROOT)) {
            withCurl = files.filter(file -> file.toString().endsWith(".md"))
                    .filter(file -> Stream.of("target", ".git", "node_modules")
                            .noneMatch(skipped -> ROOT.relativize(file).toString().contains(skipped)))
                    .filter(file -> !curlLines(file).isEmpty())
                    .map(file -> ROOT.relativize(file).normalize())
                    .toList();
        }

        assertThat(withCurl).containsExactlyInAnyOrderElementsOf(RUN);
        for (Path file : RUN) {
            assertThat(CurlLine.in(ROOT.resolve(file))).hasSize(2);
        }
    }

    private static List<CurlLine> curlLines(Path file) {
        try {
            return CurlLine.in(file);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
