package io.txbox.inbox;

import io.txbox.internal.ErrorTexts;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The value types never show payload or result bytes, and behave as values. */
class ValueTypesTest {
    @Test
    void inboundMessage_toString_showsPayloadLengthNeverContent() {
        InboundMessage m = InboundMessage.builder("k1", "card 4111-1111".getBytes(UTF_8)).tenant("acme").build();
        assertThat(m.toString()).contains("\"k1\"").contains("14 bytes").contains("acme").doesNotContain("4111");
    }

    @Test
    void inboundMessage_nullPayloadAndNullHeaderValues_becomeEmptyAndDropped() {
        Map<String, String> headers = new HashMap<>();
        headers.put("traceparent", "00-abc-def-01");
        headers.put("broken", null);
        InboundMessage m = new InboundMessage("k", null, headers, null, true);
        assertThat(m.payload()).isEmpty();
        assertThat(m.headers()).containsOnlyKeys("traceparent");
        assertThat(m.header("traceparent")).isEqualTo("00-abc-def-01");
    }

    @Test
    void inboundMessage_equalPayloadBytes_areEqualMessages() {
        assertThat(InboundMessage.of("k", new byte[] {1, 2})).isEqualTo(InboundMessage.of("k", new byte[] {1, 2}))
                .hasSameHashCodeAs(InboundMessage.of("k", new byte[] {1, 2}));
    }

    @Test
    void receiptAndOutcome_toString_neverShowResultBytes() {
        byte[] secret = "token=s3cr3t".getBytes(UTF_8);
        assertThat(new Receipt(Receipt.Status.DUPLICATE, secret, 200, 1, null).toString())
                .contains("12 bytes").doesNotContain("s3cr3t");
        assertThat(new Outcome(Outcome.Status.PROCESSED, secret, 1, null, null).toString()).doesNotContain("s3cr3t");
    }

    @Test
    void outcome_isFinal_onlyWhenTheConsumerMayAck() {
        assertThat(new Outcome(Outcome.Status.PROCESSED, null, 1, null, null).isFinal()).isTrue();
        assertThat(new Outcome(Outcome.Status.DUPLICATE, null, 1, null, null).isFinal()).isTrue();
        assertThat(new Outcome(Outcome.Status.DEAD, null, 5, "x", null).isFinal()).isTrue();
        assertThat(new Outcome(Outcome.Status.KEY_REUSED, null, 0, "x", null).isFinal()).isTrue();
        assertThat(new Outcome(Outcome.Status.FAILED, null, 1, "x", null).isFinal()).isFalse();
        assertThat(new Outcome(Outcome.Status.IN_FLIGHT, null, 1, null, null).isFinal()).isFalse();
    }

    @Test
    void fingerprint_sha256_dependsOnPayloadOnly() {
        byte[] a = Fingerprint.sha256().of(InboundMessage.builder("k", new byte[] {1}).header("h", "1").build());
        byte[] b = Fingerprint.sha256().of(InboundMessage.of("other", new byte[] {1}));
        assertThat(a).hasSize(32).isEqualTo(b);
        assertThat(Fingerprint.none().of(InboundMessage.of("k", new byte[] {1}))).isNull();
    }

    @Test
    void describe_storesClassAndMessageWithoutNulAndBounded() {
        assertThat(ErrorTexts.describe(new IllegalStateException("a\0b"))).isEqualTo("java.lang.IllegalStateException: a b");
        assertThat(ErrorTexts.describe(new RuntimeException("x".repeat(5000)))).hasSize(ErrorTexts.MAX_CHARS);
    }
}
