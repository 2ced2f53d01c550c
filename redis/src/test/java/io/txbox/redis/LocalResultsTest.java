package io.txbox.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LocalResultsTest {
    private final MutableClock clock = new MutableClock();
    private final LocalResults results = new LocalResults(clock, Duration.ofSeconds(30));
    private final byte[] fp = {1, 2, 3};

    @Test
    void get_sameFingerprintWithinTtl_isTheCommittedResult() {
        results.put("k", fp, "ok".getBytes(UTF_8), 1);

        LocalResults.Result r = results.get("k", new byte[] {1, 2, 3});

        assertThat(r).isNotNull();
        assertThat(r.result()).asString(UTF_8).isEqualTo("ok");
        assertThat(r.attempts()).isEqualTo(1);
    }

    @Test
    void get_otherFingerprint_isNotAnswered_soTheDatabaseRefusesTheReusedKey() {
        results.put("k", fp, "ok".getBytes(UTF_8), 1);

        assertThat(results.get("k", new byte[] {9})).isNull();
    }

    @Test
    void get_afterTheTtl_isGone() {
        results.put("k", fp, "ok".getBytes(UTF_8), 1);
        clock.advance(Duration.ofSeconds(30));

        assertThat(results.get("k", fp)).isNull();
    }

    @Test
    void put_pastTheByteBound_dropsTheOldestFirst() {
        byte[] big = new byte[1 << 20];
        for (int i = 0; i < 9; i++) {
            results.put("k" + i, fp, big, 1);
        }

        assertThat(results.get("k0", fp)).as("oldest, dropped").isNull();
        assertThat(results.get("k8", fp)).as("newest, kept").isNotNull();
    }
}
