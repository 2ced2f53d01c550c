package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class StepKeyTest {
    @Test
    void of_joinsOriginalAndStepWithColon() {
        assertThat(StepKey.of("K", "process-payment").value()).isEqualTo("K:process-payment");
    }

    @Test
    void next_fromReceivedStepKey_keepsOriginal() {
        assertThat(StepKey.parse("K:process-payment").next("arrange-shipping").value()).isEqualTo("K:arrange-shipping");
    }

    @Test
    void parse_originalContainingColons_splitsAtLastColon() {
        StepKey k = StepKey.parse("order:42:process-payment");
        assertThat(k.original()).isEqualTo("order:42");
        assertThat(k.step()).isEqualTo("process-payment");
    }

    @Test
    void of_stepWithColon_isRejectedNamingTheStep() {
        assertThatThrownBy(() -> StepKey.of("K", "a:b"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("\"a:b\"");
    }

    @Test
    void of_emptyOrNullOriginal_isRejected() {
        assertThatThrownBy(() -> StepKey.of("", "s")).isInstanceOf(InvalidInputException.class).hasMessageContaining("empty");
        assertThatThrownBy(() -> StepKey.of(null, "s")).isInstanceOf(InvalidInputException.class).hasMessageContaining("null");
    }

    @Test
    void of_controlCharacter_isRejectedWithItsCodePoint() {
        assertThatThrownBy(() -> StepKey.of("K\n1", "s"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("U+000A");
    }

    @Test
    void of_exactly255BytesOfUtf8_isAcceptedAnd256Rejected() {
        String emoji = "\uD83D\uDE00".repeat(63); // 63 four-byte code points: 252 bytes, 126 chars
        StepKey atLimit = StepKey.of(emoji, "ab"); // 252 + ':' + 2 = 255 bytes

        assertThat(atLimit.value().getBytes(StandardCharsets.UTF_8)).hasSize(255);
        assertThat(atLimit.original()).isEqualTo(emoji);
        assertThatThrownBy(() -> StepKey.of(emoji, "abc")) // 256 bytes, still only 130 chars
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("bytes of UTF-8");
    }

    @Test
    void parse_noColon_isRejected() {
        assertThatThrownBy(() -> StepKey.parse("plain")).isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("original:step");
    }

    @Test
    void of_loneSurrogate_isRejected() {
        assertThatThrownBy(() -> StepKey.of("K\uD800", "s")).isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("lone surrogate");
    }
}
