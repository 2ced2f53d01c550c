package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class InboxBuilderTest {
    @Test
    void builder_defaults_buildAnInboxNamedAfterTheConsumer() {
        assertThat(Inbox.builder("orders.v2:eu/payments-1").build().consumer()).isEqualTo("orders.v2:eu/payments-1");
    }

    @Test
    void consumer_withSeparatorOrBlankOrTooLong_isRejectedNamingTheValue() {
        assertThatThrownBy(() -> Inbox.builder("orders@acme")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("consumer").hasMessageContaining("\"orders@acme\"");
        assertThatThrownBy(() -> Inbox.builder("")).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> Inbox.builder(null)).isInstanceOf(ConfigException.class).hasMessageContaining("null");
        assertThatThrownBy(() -> Inbox.builder("x".repeat(129))).isInstanceOf(ConfigException.class);
    }

    @Test
    void maxAttempts_zero_isRejectedNamingPropertyAndValue() {
        assertThatThrownBy(() -> Inbox.builder("c").maxAttempts(0)).isInstanceOf(ConfigException.class)
                .hasMessage("maxAttempts must be at least 1, but was 0");
    }

    @Test
    void maxPayloadBytes_negative_isRejected() {
        assertThatThrownBy(() -> Inbox.builder("c").maxPayloadBytes(-1))
                .hasMessage("maxPayloadBytes must not be negative, but was -1");
    }

    @Test
    void lease_outOfRange_isRejected() {
        assertThatThrownBy(() -> Inbox.builder("c").lease(Duration.ZERO))
                .hasMessage("lease must be between 1 ms and 1 day, but was PT0S");
        assertThatThrownBy(() -> Inbox.builder("c").lease(Duration.ofDays(2))).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> Inbox.builder("c").lease(null)).hasMessage("lease must not be null");
    }

    @Test
    void retention_belowOneSecond_isRejected() {
        assertThatThrownBy(() -> Inbox.builder("c").retention(Duration.ofMillis(10)))
                .hasMessage("retention must be at least 1 second, but was PT0.01S");
    }

    @Test
    void transactionRetries_outOfRange_isRejected() {
        assertThatThrownBy(() -> Inbox.builder("c").transactionRetries(-1))
                .hasMessage("transactionRetries must be between 0 and 100, but was -1");
    }

    @Test
    void nullCollaborators_areRejectedNamingTheProperty() {
        assertThatThrownBy(() -> Inbox.builder("c").tables(null)).hasMessage("tables must not be null");
        assertThatThrownBy(() -> Inbox.builder("c").clock(null)).hasMessage("clock must not be null");
        assertThatThrownBy(() -> Inbox.builder("c").fingerprint(null)).hasMessage("fingerprint must not be null");
        assertThatThrownBy(() -> Inbox.builder("c").listener(null)).hasMessage("listener must not be null");
    }
}
