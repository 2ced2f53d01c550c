package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class RelayBuilderTest {
    static final Publisher NOOP = new Publisher() {
        @Override
        public String broker() {
            return "noop";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    };

    static final DataSource DS = (DataSource) java.lang.reflect.Proxy.newProxyInstance(
            RelayBuilderTest.class.getClassLoader(), new Class<?>[] {DataSource.class}, (p, m, a) -> {
                throw new UnsupportedOperationException();
            });

    @Test
    void build_withoutDataSource_namesIt() {
        assertThatThrownBy(() -> Relay.builder().route("d", Route.of(NOOP, "t")).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("dataSource");
    }

    @Test
    void build_withoutRoute_namesIt() {
        assertThatThrownBy(() -> Relay.builder().dataSource(DS).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("route");
    }

    @Test
    void batchSize_zero_namesPropertyAndValue() {
        assertThatThrownBy(() -> Relay.builder().batchSize(0))
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize").hasMessageContaining("0");
    }

    @Test
    void pollInterval_negative_namesPropertyAndValue() {
        assertThatThrownBy(() -> Relay.builder().pollInterval(Duration.ofMillis(-5)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("pollInterval").hasMessageContaining("PT-0.005S");
    }

    @Test
    void publishTimeout_notShorterThanLaneLease_rejected() {
        assertThatThrownBy(() -> Relay.builder().dataSource(DS).route("d", Route.of(NOOP, "t"))
                .publishTimeout(Duration.ofSeconds(30)).laneLease(Duration.ofSeconds(30)).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("publishTimeout").hasMessageContaining("laneLease");
    }

    @Test
    void route_sameDestinationTwice_rejected() {
        assertThatThrownBy(() -> Relay.builder().route("d", Route.of(NOOP, "t")).route("d", Route.of(NOOP, "u")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("\"d\"");
    }

    @Test
    void relayId_withSpaces_rejectedWithValue() {
        assertThatThrownBy(() -> Relay.builder().relayId("a b"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("relayId").hasMessageContaining("\"a b\"");
    }

    @Test
    void backoff_initialAboveMax_rejected() {
        assertThatThrownBy(() -> Relay.builder().dataSource(DS).route("d", Route.of(NOOP, "t"))
                .backoff(Duration.ofSeconds(10), Duration.ofSeconds(1)).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("initialBackoff");
    }

    @Test
    void build_valid_isNewAndNotRunning() {
        try (Relay relay = Relay.builder().dataSource(DS).route("d", Route.of(NOOP, "t")).relayId("r1").build()) {
            assertThat(relay.status().state()).isEqualTo(RelayStatus.State.NEW);
            assertThat(relay.id()).isEqualTo("r1");
        }
    }

    @Test
    void publishRecord_headers_reservedFirstThenUserHeaders() {
        var r = new PublishRecord(1, "K:s", "K", "d", "rk", new byte[0], java.util.Map.of("x", "1"), "text/plain",
                null, null, 0, java.time.Instant.EPOCH);
        assertThat(r.headers()).containsExactly(java.util.Map.entry("idempotency-key", "K:s"),
                java.util.Map.entry("txbox-original-key", "K"), java.util.Map.entry("content-type", "text/plain"),
                java.util.Map.entry("x", "1"));
        assertThat(r.toString()).doesNotContain("1\"").contains("0 bytes");
    }
}
