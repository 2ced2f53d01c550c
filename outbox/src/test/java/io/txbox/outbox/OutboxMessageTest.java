package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class OutboxMessageTest {
    private static final StepKey KEY = StepKey.of("K", "pay");

    @Test
    void header_reservedName_isRejected() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, "d").header("Idempotency-Key", "x"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("set by txbox");
    }

    @Test
    void header_nameIsLowerCased_andUnicodeValuesKept() {
        OutboxMessage m = OutboxMessage.builder(KEY, "d").header("X-Emoji", "caf\u00e9 \uD83D\uDE00").build();
        assertThat(m.headers()).containsEntry("x-emoji", "caf\u00e9 \uD83D\uDE00");
    }

    @Test
    void header_valueWithNul_isRejected() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, "d").header("a", "x\u0000y"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("NUL");
    }

    @Test
    void header_emptyName_isRejected() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, "d").header("", "v"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("empty");
    }

    @Test
    void headers_overTotalCap_areRejected() {
        String big = "v".repeat(40_000);
        var b = OutboxMessage.builder(KEY, "d").header("a", big);
        assertThatThrownBy(() -> b.header("b", big)).isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("headers exceed");
    }

    @Test
    void traceparent_malformed_isRejected() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, "d").traceparent("not-a-trace"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("traceparent");
    }

    @Test
    void destination_missing_isRejected() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, null)).isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("destination");
    }

    @Test
    void delay_negative_isRejected() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, "d").delay(Duration.ofSeconds(-1)))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("delay");
    }

    @Test
    void toString_neverShowsPayload() {
        OutboxMessage m = OutboxMessage.builder(KEY, "d").payload("secret-card-number").build();
        assertThat(m.toString()).doesNotContain("secret").contains("K:pay");
    }

    @Test
    void renderedInsert_usesConfiguredSchemaAndPrefix_andDoesNothingOnConflict() {
        String sql = PostgresOutboxStore.renderInsert(new TxboxTables("orders", "tx_"));
        assertThat(sql).contains("\"orders\".\"tx_outbox\"").containsIgnoringCase("on conflict")
                .containsIgnoringCase("do nothing");
        assertThat(sql.chars().filter(c -> c == '?').count()).isEqualTo(14);
    }

    @Test
    void lanes_sameRoutingKey_sameLane_andWithinRange() {
        assertThat(Lanes.of("order-1", "a:b")).isEqualTo(Lanes.of("order-1", "c:d"));
        for (int i = 0; i < 1000; i++) {
            assertThat((int) Lanes.of("k" + i, "x")).isBetween(0, Lanes.COUNT - 1);
        }
    }
}
