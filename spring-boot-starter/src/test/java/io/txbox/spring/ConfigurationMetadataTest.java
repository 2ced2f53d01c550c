package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.http.HttpIdempotency;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayOption;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.convert.DurationStyle;

/** The generated configuration metadata describes every property, with the library's defaults. */
class ConfigurationMetadataTest {
    private static final String METADATA = "META-INF/spring-configuration-metadata.json";

    @Test
    void metadata_describesEveryPropertyWithTheLibraryDefaults() throws IOException {
        DocumentContext json;
        try (InputStream in = getClass().getClassLoader().getResourceAsStream(METADATA)) {
            assertThat(in).as(METADATA).isNotNull();
            json = JsonPath.parse(in);
        }
        Map<String, Object> expected = new java.util.LinkedHashMap<>();
        expected.put("txbox.schema", TxboxTables.DEFAULT_SCHEMA);
        expected.put("txbox.prefix", TxboxTables.DEFAULT_PREFIX);
        expected.put("txbox.migrations", "txbox");
        expected.put("txbox.inbox.max-attempts", Inbox.DEFAULT_MAX_ATTEMPTS);
        expected.put("txbox.inbox.max-payload-bytes", Inbox.DEFAULT_MAX_PAYLOAD_BYTES);
        expected.put("txbox.outbox.max-record-bytes", Outbox.DEFAULT_MAX_RECORD_BYTES);
        expected.put("txbox.outbox.notify-relays", true);
        expected.put("txbox.inbox.consumer", null);
        expected.put("txbox.relay.enabled", false);
        expected.put("txbox.relay.routes", null);
        for (RelayOption<?> o : RelayOption.all()) { // every relay option, with the table's default
            expected.put("txbox.relay." + o.key(), o.defaultValue() instanceof Duration d ? print(d) : o.defaultValue());
        }
        expected.put("txbox.relay.health-timeout", print(TxboxProperties.RelayProperties.DEFAULT_HEALTH_TIMEOUT));
        expected.put("txbox.relay.kafka.bootstrap-servers", null);
        expected.put("txbox.relay.kafka.properties", null);
        expected.put("txbox.relay.rabbitmq.uri", null);
        expected.put("txbox.http.idempotency.enabled", false);
        expected.put("txbox.http.idempotency.consumer", null);
        expected.put("txbox.http.idempotency.methods", List.of("POST", "PATCH"));
        expected.put("txbox.http.idempotency.paths", List.of("/**"));
        expected.put("txbox.http.idempotency.header-name", HttpIdempotency.DEFAULT_HEADER);
        expected.put("txbox.http.idempotency.key-required", true);
        expected.put("txbox.http.idempotency.max-body-bytes", HttpIdempotency.DEFAULT_MAX_BODY_BYTES);
        expected.put("txbox.http.idempotency.lease", print(Inbox.DEFAULT_LEASE));
        expected.put("txbox.http.idempotency.max-attempts", HttpIdempotency.NO_ATTEMPT_LIMIT);
        expected.put("txbox.http.idempotency.replayed-headers",
                new java.util.TreeSet<>(HttpIdempotency.DEFAULT_REPLAYED_HEADERS).stream().toList());
        expected.put("txbox.http.idempotency.order", 0);

        List<String> names = json.read("$.properties[*].name");
        assertThat(names).containsExactlyInAnyOrderElementsOf(expected.keySet());
        expected.forEach((name, value) -> {
            List<Map<String, Object>> property = json.read("$.properties[?(@.name == '" + name + "')]");
            assertThat(property).as(name).hasSize(1);
            assertThat((String) property.get(0).get("description")).as(name + " description").isNotBlank();
            assertThat(property.get(0).get("defaultValue")).as(name + " default").isEqualTo(value);
        });
        List<String> modes = json.read("$.hints[?(@.name == 'txbox.migrations')].values[*].value");
        assertThat(modes).containsExactly("txbox", "flyway", "none");
    }

    /** A duration as the metadata writes it: {@code 200ms}, {@code 5m}. */
    private static String print(Duration d) {
        ChronoUnit unit = d.toMillis() % 60_000 == 0 ? ChronoUnit.MINUTES
                : d.toMillis() % 1000 == 0 ? ChronoUnit.SECONDS : ChronoUnit.MILLIS;
        return DurationStyle.SIMPLE.print(d, unit);
    }

    @Test
    void consumerName_defaultsToApplicationNameThenApplication() {
        assertThat(TxboxAutoConfiguration.consumerName("orders", "shipping")).isEqualTo("orders");
        assertThat(TxboxAutoConfiguration.consumerName(null, "shipping")).isEqualTo("shipping");
        assertThat(TxboxAutoConfiguration.consumerName(null, null)).isEqualTo(TxboxProperties.DEFAULT_CONSUMER);
    }

    @Test
    void relayOptions_everyProperty_reachesTheSameBuilderSettingAsTheJavaSetter() {
        Map<String, String> text = Map.ofEntries(Map.entry("id", "r-1"), Map.entry("workers", "7"),
                Map.entry("batch-size", "300"), Map.entry("poll-interval", "7ms"), Map.entry("listen", "false"),
                Map.entry("publish-timeout", "3s"),
                Map.entry("lane-lease", "9s"), Map.entry("max-attempts", "4"), Map.entry("initial-backoff", "20ms"),
                Map.entry("max-backoff", "2s"), Map.entry("backlog-interval", "0s"), Map.entry("shutdown-timeout", "1s"),
                Map.entry("move-on-destinations", "events,audit"));
        assertThat(text.keySet()).containsExactlyInAnyOrderElementsOf(RelayOption.all().stream().map(RelayOption::key).toList());
        Map<String, String> properties = new java.util.HashMap<>();
        text.forEach((k, v) -> properties.put("txbox.relay." + k, v));
        TxboxProperties bound = new org.springframework.boot.context.properties.bind.Binder(
                new org.springframework.boot.context.properties.source.MapConfigurationPropertySource(properties))
                .bind(TxboxProperties.PREFIX, TxboxProperties.class).get();
        Relay.Builder fromProperties = TxboxRelayAutoConfiguration.applyOptions(bound.getRelay(), Relay.builder());
        Relay.Builder fromJava = Relay.builder().relayId("r-1").workers(7).batchSize(300).pollInterval(Duration.ofMillis(7)).listen(false)
                .publishTimeout(Duration.ofSeconds(3)).laneLease(Duration.ofSeconds(9)).maxAttempts(4)
                .backoff(Duration.ofMillis(20), Duration.ofSeconds(2)).backlogInterval(Duration.ZERO)
                .shutdownTimeout(Duration.ofSeconds(1)).moveOnDestinations("events", "audit");
        for (RelayOption<?> o : RelayOption.all()) {
            assertThat(o.get(fromProperties)).as(o.key()).isEqualTo(o.get(fromJava)).isNotEqualTo(o.defaultValue());
        }
    }
}
