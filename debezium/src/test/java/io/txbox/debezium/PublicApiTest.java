package io.txbox.debezium;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.PublicApi;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The module's public types outside internal packages are exactly those in {@code
 * public-api.txt}: a new public type fails the build until it is listed on purpose.
 */
class PublicApiTest {
    @Test
    void publicTypes_areExactlyTheListedOnes() {
        assertThat(PublicApi.of(Path.of("target", "classes")).problems(Path.of("public-api.txt"))).isEmpty();
    }
}
