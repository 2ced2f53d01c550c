package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import java.time.Duration;
import java.util.Map;
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
        OutboxMessage m = OutboxMessage.builder(KEY, "d").payload("x").header("X-Emoji", "caf\u00e9 \uD83D\uDE00").build();
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

    private static final String SENDER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    @Test
    void withTraceContext_none_keepsTheMessage() {
        OutboxMessage m = OutboxMessage.builder(KEY, "d").payload("p").build();
        assertThat(m.withTraceContext(Map.of())).isSameAs(m);
    }

    @Test
    void withTraceContext_senderContext_isCarriedAndCounted() {
        OutboxMessage m = OutboxMessage.builder(KEY, "d").routingKey("r").payload("p").header("x-a", "1").build();
        OutboxMessage traced = m.withTraceContext(Map.of("traceparent", SENDER, "tracestate", "vendor=1"));
        assertThat(traced.traceparent()).isEqualTo(SENDER);
        assertThat(traced.tracestate()).isEqualTo("vendor=1");
        assertThat(traced.headers()).isEqualTo(m.headers());
        assertThat(traced.routingKey()).isEqualTo("r");
        assertThat(traced.recordBytes()).isGreaterThan(m.recordBytes());
    }

    @Test
    void withTraceContext_messageHasItsOwnTraceparent_keepsIt() {
        String own = "00-11111111111111111111111111111111-2222222222222222-01";
        OutboxMessage m = OutboxMessage.builder(KEY, "d").payload("x").traceparent(own).build();
        assertThat(m.withTraceContext(Map.of("traceparent", SENDER)).traceparent()).isEqualTo(own);
    }

    @Test
    void withTraceContext_traceStateOverTheCap_isLeftOutNotFatal() {
        OutboxMessage traced = OutboxMessage.builder(KEY, "d").payload("x").build()
                .withTraceContext(Map.of("traceparent", SENDER, "tracestate", "v=" + "x".repeat(600)));
        assertThat(traced.traceparent()).isEqualTo(SENDER);
        assertThat(traced.tracestate()).isNull();
    }

    @Test
    void build_payloadNeverSet_isRefusedNotSentEmpty() {
        assertThatThrownBy(() -> OutboxMessage.builder(KEY, "d").routingKey("r").build())
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("payload is not set for " + KEY)
                .hasMessageContaining("new byte[0]");
    }

    @Test
    void build_explicitEmptyPayload_isAnEmptyMessage() {
        assertThat(OutboxMessage.builder(KEY, "d").payload(new byte[0]).build().payload()).isEmpty();
        assertThat(OutboxMessage.builder(KEY, "d").payload("").build().payload()).isEmpty();
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
