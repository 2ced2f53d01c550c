package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

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
        expected.put("txbox.inbox.consumer", null);

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

    @Test
    void consumerName_defaultsToApplicationNameThenApplication() {
        assertThat(TxboxAutoConfiguration.consumerName("orders", "shipping")).isEqualTo("orders");
        assertThat(TxboxAutoConfiguration.consumerName(null, "shipping")).isEqualTo("shipping");
        assertThat(TxboxAutoConfiguration.consumerName(null, null)).isEqualTo(TxboxProperties.DEFAULT_CONSUMER);
    }
}
