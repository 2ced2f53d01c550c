package io.txbox.inbox.consumer.internal;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.inbox.InboundMessage;
import io.txbox.internal.KeyLogs;
import io.txbox.internal.Tracing;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/** The handler's log lines carry the consumer and the key, hashed when asked, and nothing leaks after. */
class MdcHandlerTest {
    private final Map<String, String> seen = new HashMap<>();
    private final InboundMessage message =
            new InboundMessage("alice@example.com", "x".getBytes(UTF_8), Map.of(), null, false);

    @AfterEach
    void clear() {
        MDC.clear();
    }

    private MdcHandler handler(boolean hash) {
        return new MdcHandler((tx, m) -> {
            seen.put("txbox.consumer", MDC.get("txbox.consumer"));
            seen.put("txbox.key", MDC.get("txbox.key"));
            return null;
        }, "payments", KeyLogs.of(hash), Tracing.global());
    }

    @Test
    void handle_setsConsumerAndKeyForTheHandlerAndRemovesThemAfter() throws Exception {
        handler(false).handle(null, message);

        assertThat(seen).containsEntry("txbox.consumer", "payments").containsEntry("txbox.key", "alice@example.com");
        assertThat(MDC.get("txbox.consumer")).isNull();
        assertThat(MDC.get("txbox.key")).isNull();
    }

    @Test
    void handle_hashKeys_keyNeverInTheMdc() throws Exception {
        handler(true).handle(null, message);

        assertThat(seen.get("txbox.key")).matches("sha256:[0-9a-f]{16}").doesNotContain("alice")
                .isEqualTo(KeyLogs.hashOf("alice@example.com"));
    }

    @Test
    void handle_handlerThrows_previousValuesRestored() {
        MDC.put("txbox.consumer", "outer");
        MdcHandler failing = new MdcHandler((tx, m) -> {
            throw new IllegalStateException("boom");
        }, "payments", KeyLogs.of(false), Tracing.global());

        assertThatThrownBy(() -> failing.handle(null, message)).hasMessage("boom");
        assertThat(MDC.get("txbox.consumer")).isEqualTo("outer");
        assertThat(MDC.get("txbox.key")).isNull();
    }
}
