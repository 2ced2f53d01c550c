package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RelayOptionTest {
    @Test
    void all_namesAndKeysUnique_defaultsAllowedByTheirOwnRule() {
        Set<String> names = new HashSet<>();
        Set<String> keys = new HashSet<>();
        for (RelayOption<?> o : RelayOption.all()) {
            assertThat(names.add(o.name())).as(o.name()).isTrue();
            assertThat(keys.add(o.key())).as(o.key()).isTrue();
            assertThat(o.key()).matches("[a-z]+(-[a-z]+)*");
            if (o.defaultValue() != null) {
                check(o, o.defaultValue());
            }
        }
        assertThat(RelayOption.all()).hasSize(13);
    }

    @SuppressWarnings("unchecked")
    private static <T> void check(RelayOption<T> o, Object value) {
        assertThat(o.check((T) value)).isEqualTo(value);
    }

    @Test
    void typedSetterAndTableSet_reachTheSameValue() {
        Relay.Builder typed = Relay.builder().workers(7).batchSize(300).pollInterval(Duration.ofMillis(7)).listen(false)
                .publishTimeout(Duration.ofSeconds(3)).laneLease(Duration.ofSeconds(9)).maxAttempts(4)
                .backoff(Duration.ofMillis(20), Duration.ofSeconds(2)).backlogInterval(Duration.ZERO)
                .shutdownTimeout(Duration.ofSeconds(1)).relayId("r-1").moveOnDestinations("events", "audit");
        Relay.Builder table = Relay.builder();
        RelayOption.MOVE_ON_DESTINATIONS.set(table, "events,audit");
        RelayOption.WORKERS.set(table, 7);
        RelayOption.BATCH_SIZE.set(table, 300);
        RelayOption.POLL_INTERVAL.set(table, Duration.ofMillis(7));
        RelayOption.LISTEN.set(table, false);
        RelayOption.PUBLISH_TIMEOUT.set(table, Duration.ofSeconds(3));
        RelayOption.LANE_LEASE.set(table, Duration.ofSeconds(9));
        RelayOption.MAX_ATTEMPTS.set(table, 4);
        RelayOption.INITIAL_BACKOFF.set(table, Duration.ofMillis(20));
        RelayOption.MAX_BACKOFF.set(table, Duration.ofSeconds(2));
        RelayOption.BACKLOG_INTERVAL.set(table, Duration.ZERO);
        RelayOption.SHUTDOWN_TIMEOUT.set(table, Duration.ofSeconds(1));
        RelayOption.RELAY_ID.set(table, "r-1");
        for (RelayOption<?> o : RelayOption.all()) {
            assertThat(o.get(table)).as(o.name()).isEqualTo(o.get(typed)).isNotEqualTo(o.defaultValue());
        }
    }

    @Test
    void check_outOfRange_namesTheOptionItsRuleAndTheValue() {
        assertThatThrownBy(() -> RelayOption.WORKERS.set(Relay.builder(), 65)).isInstanceOf(ConfigException.class)
                .hasMessage("workers must be between 1 and 64, but was 65");
        assertThatThrownBy(() -> Relay.builder().laneLease(Duration.ofMillis(10))).isInstanceOf(ConfigException.class)
                .hasMessage("laneLease must be between PT1S and PT1H, but was PT0.01S");
        assertThatThrownBy(() -> Relay.builder().maxAttempts(0)).hasMessage("maxAttempts must be at least 1, but was 0");
        assertThatThrownBy(() -> Relay.builder().backlogInterval(Duration.ofMillis(5)))
                .hasMessageStartingWith("backlogInterval must be zero (off) or between PT0.1S and PT24H");
        assertThatThrownBy(() -> Relay.builder().relayId("a b")).hasMessage(
                "relayId must be 1-200 characters of [A-Za-z0-9._:-], but was \"a b\"");
        assertThatThrownBy(() -> RelayOption.POLL_INTERVAL.check(null)).hasMessageEndingWith("but was null");
    }

    @Test
    void get_unsetOption_isTheDocumentedDefault() {
        Relay.Builder b = Relay.builder();
        assertThat(List.of(RelayOption.WORKERS.get(b), RelayOption.BATCH_SIZE.get(b), RelayOption.MAX_ATTEMPTS.get(b)))
                .containsExactly(Relay.DEFAULT_WORKERS, Relay.DEFAULT_BATCH_SIZE, Relay.DEFAULT_MAX_ATTEMPTS);
        assertThat(RelayOption.LANE_LEASE.get(b)).isEqualTo(Relay.DEFAULT_LANE_LEASE);
        assertThat(RelayOption.RELAY_ID.get(b)).isNull();
        assertThat(RelayOption.LISTEN.get(b)).isTrue();
    }
}
