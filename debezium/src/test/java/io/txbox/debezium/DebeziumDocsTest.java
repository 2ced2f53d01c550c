package io.txbox.debezium;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.connector.mysql.MySqlConnector;
import io.debezium.connector.postgresql.PostgresConnector;
import io.debezium.storage.kafka.history.KafkaSchemaHistory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.transforms.Transformation;
import org.junit.jupiter.api.Test;

/**
 * Every property in {@code docs/DEBEZIUM.md}'s configuration blocks is known to, and accepted by,
 * the configuration definition that reads it: the Debezium connector's own, Kafka Connect's
 * connector and worker configs, the transform's, the Kafka producer's. Each block names what it is
 * for in its first line ({@code # checked-as: connector postgres|mysql}, {@code worker}, {@code
 * server}).
 */
class DebeziumDocsTest {
    static final Path DOC = Path.of("..", "docs", "DEBEZIUM.md");
    static final Pattern BLOCK = Pattern.compile("```properties\\n\\s*# checked-as: ([a-z ]+)\\n(.*?)```", Pattern.DOTALL);
    /**
     * Debezium Server's own keys (sink and format), from its documentation: Debezium Server is not
     * a library this build can load, so these are the only keys taken on trust.
     */
    static final Set<String> SERVER_ONLY = Set.of("debezium.sink.type", "debezium.format.key", "debezium.format.value",
            "debezium.format.header", "debezium.sink.rabbitmq.connection.host", "debezium.sink.rabbitmq.connection.port",
            "debezium.sink.rabbitmq.connection.username", "debezium.sink.rabbitmq.connection.password",
            "debezium.sink.rabbitmq.routingKey.source", "debezium.sink.rabbitmq.deliveryMode",
            "debezium.sink.rabbitmq.ackTimeout");

    record Block(String kind, Map<String, String> properties) {}

    static List<Block> blocks() throws IOException {
        String doc = Files.readString(DOC);
        List<Block> out = new ArrayList<>();
        Matcher m = BLOCK.matcher(doc);
        while (m.find()) {
            Map<String, String> props = new LinkedHashMap<>();
            for (String line : m.group(2).split("\\n")) {
                String l = line.strip();
                if (l.isEmpty() || l.startsWith("#")) {
                    continue;
                }
                int eq = l.indexOf('=');
                props.put(l.substring(0, eq), l.substring(eq + 1));
            }
            out.add(new Block(m.group(1).strip(), props));
        }
        return out;
    }

    @Test
    void everyConfigurationBlock_isChecked() throws IOException {
        assertThat(blocks()).extracting(Block::kind).containsExactly("connector postgres", "connector mysql", "worker",
                "connector postgres", "server", "server");
        long unchecked = Files.readString(DOC).lines().filter(l -> l.strip().equals("```properties")).count();
        assertThat(unchecked).as("properties blocks, each with a checked-as line").isEqualTo(blocks().size());
    }

    @Test
    void connectorBlocks_areAcceptedByTheConnectorAndKafkaConnect() throws Exception {
        for (Block b : blocks()) {
            if (b.kind().startsWith("connector")) {
                checkConnector(b.kind().endsWith("postgres") ? new PostgresConnector() : new MySqlConnector(), b.properties(),
                        Set.of());
            }
        }
    }

    @Test
    void workerBlock_isAcceptedByADistributedWorker() throws Exception {
        for (Block b : blocks()) {
            if (b.kind().equals("worker")) {
                DistributedConfig config = new DistributedConfig(b.properties());
                assertThat(config.values().keySet()).containsAll(b.properties().keySet());
                assertThat(config.getString(DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG)).isEqualTo("enabled");
            }
        }
    }

    @Test
    void serverBlocks_sourceTransformAndProducerKeys_areAccepted() throws Exception {
        for (Block b : blocks()) {
            if (!b.kind().equals("server")) {
                continue;
            }
            Map<String, String> source = new LinkedHashMap<>();
            Map<String, Object> producer = new LinkedHashMap<>();
            for (Map.Entry<String, String> e : b.properties().entrySet()) {
                String k = e.getKey();
                if (k.startsWith("debezium.source.")) {
                    source.put(k.substring("debezium.source.".length()), e.getValue());
                } else if (k.startsWith("debezium.transforms")) {
                    source.put(k.substring("debezium.".length()), e.getValue());
                } else if (k.startsWith("debezium.sink.kafka.producer.")) {
                    producer.put(k.substring("debezium.sink.kafka.producer.".length()), e.getValue());
                } else {
                    assertThat(SERVER_ONLY).as("a Debezium Server key this test knows: %s", k).contains(k);
                }
            }
            if (!producer.isEmpty()) {
                assertThat(ProducerConfig.configNames()).containsAll(producer.keySet());
                new ProducerConfig(producer);
            }
            assertThat(source.get("connector.class")).isEqualTo(PostgresConnector.class.getName());
            // the engine's own keys, as a standalone worker defines them
            checkConnector(new PostgresConnector(), source, Set.of(StandaloneConfig.OFFSET_STORAGE_FILE_FILENAME_CONFIG,
                    WorkerConfig.OFFSET_COMMIT_INTERVAL_MS_CONFIG));
        }
    }

    /** Each key is the connector's, Kafka Connect's, the named transform's, or in {@code engineKeys}; no value is refused. */
    static void checkConnector(Connector connector, Map<String, String> props, Set<String> engineKeys) throws Exception {
        ConfigDef own = connector.config();
        ConfigDef connect = SourceConnectorConfig.configDef();
        Map<String, String> ownProps = new LinkedHashMap<>();
        Map<String, String> connectProps = new LinkedHashMap<>();
        Map<String, Map<String, String>> transforms = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : props.entrySet()) {
            String k = e.getKey();
            if (k.startsWith("transforms.")) {
                String alias = k.substring("transforms.".length(), k.indexOf('.', "transforms.".length()));
                transforms.computeIfAbsent(alias, a -> new LinkedHashMap<>())
                        .put(k.substring(("transforms." + alias + ".").length()), e.getValue());
            } else if (k.startsWith("schema.history.internal.kafka.")) {
                assertThat(KafkaSchemaHistory.ALL_FIELDS.fieldWithName(k)).as("%s: a key of Debezium's Kafka schema history", k)
                        .isNotNull();
            } else if (own.configKeys().containsKey(k)) {
                ownProps.put(k, e.getValue());
            } else if (connect.configKeys().containsKey(k)) {
                connectProps.put(k, e.getValue());
            } else {
                assertThat(engineKeys).as("%s: a key of %s or Kafka Connect", k, connector.getClass().getSimpleName()).contains(k);
            }
        }
        assertAccepted(own, ownProps);
        assertAccepted(connect, connectProps);
        for (Map.Entry<String, Map<String, String>> t : transforms.entrySet()) {
            Map<String, String> config = new LinkedHashMap<>(t.getValue());
            String type = config.remove("type");
            @SuppressWarnings("unchecked")
            Transformation<?> transform = (Transformation<?>) Class.forName(type).getDeclaredConstructor().newInstance();
            assertThat(transform.config().configKeys().keySet()).as("keys of transform %s", type).containsAll(config.keySet());
            transform.configure(config);
            transform.close();
        }
        for (String converter : List.of("key.converter", "value.converter", "header.converter")) {
            if (props.containsKey(converter)) {
                Class.forName(props.get(converter));
            }
        }
    }

    static void assertAccepted(ConfigDef def, Map<String, String> props) {
        for (ConfigValue v : def.validate(props)) {
            if (props.containsKey(v.name())) {
                assertThat(v.errorMessages()).as("%s=%s", v.name(), props.get(v.name())).isEmpty();
            }
        }
    }
}
