package io.txbox.debezium;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.debezium.config.Configuration;
import io.debezium.config.Field;
import io.debezium.connector.mysql.MySqlConnector;
import io.debezium.connector.postgresql.PostgresConnector;
import io.debezium.embedded.EmbeddedEngineConfig;
import io.debezium.embedded.async.AsyncEngineConfig;
import io.debezium.storage.kafka.history.KafkaSchemaHistory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.transforms.Transformation;
import org.junit.jupiter.api.Test;

/**
 * Every property in {@code docs/DEBEZIUM.md}'s configuration blocks is known to, and accepted by,
 * the configuration definition that reads it: the Debezium connector's own, Kafka Connect's
 * connector and worker configs, the embedded engine's (which Debezium Server runs), the
 * transform's, the Kafka producer's; a misspelled key fails. Each block names what it is
 * for in its first line ({@code # checked-as: connector postgres|mariadb}, {@code worker}, {@code
 * server}). The MariaDB connector is checked in a class loader of its own, with the Debezium
 * version it is built with ({@link MariaDbDebezium}), and its block against MySQL's connector too.
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
        assertThat(blocks()).extracting(Block::kind).containsExactly("connector postgres", "connector mariadb", "worker",
                "connector postgres", "server", "server");
        long unchecked = Files.readString(DOC).lines().filter(l -> l.strip().equals("```properties")).count();
        assertThat(unchecked).as("properties blocks, each with a checked-as line").isEqualTo(blocks().size());
    }

    @Test
    void connectorBlocks_areAcceptedByTheConnectorAndKafkaConnect() throws Exception {
        checkEach("connector");
    }

    @Test
    void workerBlock_isAcceptedByADistributedWorker() throws Exception {
        checkEach("worker");
        for (Block b : blocks()) {
            if (b.kind().equals("worker")) {
                assertThat(new DistributedConfig(b.properties()).getString(DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG))
                        .isEqualTo("enabled");
            }
        }
    }

    @Test
    void serverBlocks_sourceTransformAndProducerKeys_areAccepted() throws Exception {
        checkEach("server");
    }

    /**
     * The check is not vacuous: every block with any one of its keys misspelled (a letter too
     * many) is refused, so a typo in the page fails this class.
     */
    @Test
    void everyBlock_withAnyKeyMisspelled_isRefused() throws Exception {
        int refused = 0;
        for (Block b : blocks()) {
            for (String key : b.properties().keySet()) {
                Map<String, String> typo = new LinkedHashMap<>();
                b.properties().forEach((k, v) -> typo.put(k.equals(key) ? k + "x" : k, v));
                assertThatThrownBy(() -> check(new Block(b.kind(), typo))).as("%s with %sx", b.kind(), key)
                        .isInstanceOf(Throwable.class);
                refused++;
            }
        }
        assertThat(refused).as("misspelled keys").isGreaterThan(100);
    }

    private static void checkEach(String kindPrefix) throws Exception {
        List<Block> matching = blocks().stream().filter(b -> b.kind().startsWith(kindPrefix)).toList();
        assertThat(matching).as("%s blocks", kindPrefix).isNotEmpty();
        for (Block b : matching) {
            check(b);
        }
    }

    /** Checks one block against the configuration definitions that read its kind of keys. */
    static void check(Block b) throws Exception {
        switch (b.kind()) {
            case "connector postgres" -> checkConnector(new PostgresConnector(), b.properties(), k -> false);
            case "connector mariadb" -> {
                assertThat(b.properties().get("connector.class")).isEqualTo(MariaDbDebezium.CONNECTOR);
                Connector mariadb = MariaDbDebezium.connector();
                Thread thread = Thread.currentThread();
                ClassLoader before = thread.getContextClassLoader();
                thread.setContextClassLoader(mariadb.getClass().getClassLoader());
                try {
                    checkConnector(mariadb, b.properties(), k -> false);
                } finally {
                    thread.setContextClassLoader(before);
                }
                // the page's "MySQL: the same keys with MySqlConnector"
                Map<String, String> mysql = new LinkedHashMap<>(b.properties());
                mysql.put("connector.class", MySqlConnector.class.getName());
                checkConnector(new MySqlConnector(), mysql, k -> false);
            }
            case "worker" -> assertThat(new DistributedConfig(b.properties()).values().keySet())
                    .as("keys of a distributed worker").containsAll(b.properties().keySet());
            case "server" -> checkServer(b.properties());
            default -> throw new AssertionError("no check for blocks of kind " + b.kind());
        }
    }

    /**
     * A Debezium Server block: {@code debezium.source.*} against the connector, Kafka Connect and
     * the embedded engine Debezium Server runs; {@code debezium.transforms*} against the
     * transform; {@code debezium.sink.kafka.producer.*} against the Kafka producer; the rest
     * against {@link #SERVER_ONLY}.
     */
    static void checkServer(Map<String, String> properties) throws Exception {
        Map<String, String> source = new LinkedHashMap<>();
        Map<String, Object> producer = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : properties.entrySet()) {
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
        checkConnector(new PostgresConnector(), source, DebeziumDocsTest::engineKey);
        List<String> problems = new ArrayList<>();
        Map<String, String> engine = new LinkedHashMap<>(source);
        // the engine's name is set by Debezium Server, not in its properties
        engine.putIfAbsent(EmbeddedEngineConfig.ENGINE_NAME.name(), "server");
        Configuration.from(engine).validateAndRecord(ENGINE_FIELDS, problems::add);
        assertThat(problems).as("the embedded engine's validation").isEmpty();
    }

    /** The embedded engine's own keys, as Debezium defines them. */
    static final Field.Set ENGINE_FIELDS = EmbeddedEngineConfig.ALL_FIELDS.with(AsyncEngineConfig.ALL_FIELDS);

    static boolean engineKey(String key) {
        return ENGINE_FIELDS.fieldWithName(key) != null;
    }

    /** Each key is the connector's, Kafka Connect's, the named transform's, or an {@code engineKey}; no value is refused. */
    static void checkConnector(Connector connector, Map<String, String> props, Predicate<String> engineKey) throws Exception {
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
                assertThat(engineKey.test(k)).as("%s: a key of %s, Kafka Connect or the engine", k,
                        connector.getClass().getSimpleName()).isTrue();
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
