package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayOption;
import io.txbox.relay.standalone.RelayConfig.Broker;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RelayConfigTest {
    @TempDir
    Path dir;

    private Path file(String... lines) throws IOException {
        Path f = dir.resolve("relay.properties");
        Files.writeString(f, String.join("\n", lines));
        return f;
    }

    private static final String URL = "txbox.jdbc.url=jdbc:postgresql://db:5432/orders";

    @Test
    void load_minimal_takesTheRelayDefaults() throws IOException {
        RelayConfig c = RelayConfig.load(file(URL, "txbox.destination.payments=kafka:payments",
                "txbox.kafka.bootstrap-servers=k:9092"), Map.of());
        assertThat(c.relay(RelayOption.BATCH_SIZE)).isEqualTo(Relay.DEFAULT_BATCH_SIZE);
        assertThat(c.relay(RelayOption.POLL_INTERVAL)).isEqualTo(Relay.DEFAULT_POLL_INTERVAL);
        assertThat(c.relay(RelayOption.WORKERS)).isEqualTo(Relay.DEFAULT_WORKERS);
        assertThat(c.poolSize()).isEqualTo(Relay.DEFAULT_WORKERS + 3);
        assertThat(c.tables().schema()).isEqualTo("public");
        assertThat(c.httpPort()).isEqualTo(RelayConfig.DEFAULT_HTTP_PORT);
        assertThat(c.kafkaProperties()).containsEntry("bootstrap.servers", "k:9092");
        assertThat(c.destinations().get("payments")).isEqualTo(new RelayConfig.Destination("payments", Broker.KAFKA, "payments"));
    }

    @Test
    void load_everyKey_isParsed() throws IOException {
        RelayConfig c = RelayConfig.load(file(URL, "txbox.jdbc.user=relay", "txbox.jdbc.password=pw-1234",
                "txbox.jdbc.pool-size=9", "txbox.schema=orders", "txbox.table-prefix=tx_", "txbox.relay.id=relay-a",
                "txbox.relay.workers=4", "txbox.relay.batch-size=50", "txbox.relay.poll-interval=250ms",
                "txbox.relay.publish-timeout=PT2S", "txbox.relay.lane-lease=20s", "txbox.relay.max-attempts=3",
                "txbox.relay.initial-backoff=100ms", "txbox.relay.max-backoff=1m", "txbox.relay.backlog-interval=0",
                "txbox.relay.shutdown-timeout=5s", "txbox.kafka.bootstrap-servers=k:9092", "txbox.kafka.linger.ms=20",
                "txbox.rabbitmq.uri=amqp://u:p@r:5672/%2f", "txbox.destination.shipping=rabbitmq:shipping-x",
                "txbox.destination.payments=kafka:payments.v1", "txbox.http.host=127.0.0.1", "txbox.http.port=0",
                "txbox.health.timeout=500ms"), Map.of());
        assertThat(c.jdbcUser()).isEqualTo("relay");
        assertThat(c.poolSize()).isEqualTo(9);
        assertThat(c.tables().qualified(c.tables().outboxTable())).isEqualTo("\"orders\".\"tx_outbox\"");
        assertThat(c.relay(RelayOption.RELAY_ID)).isEqualTo("relay-a");
        assertThat(c.relay(RelayOption.POLL_INTERVAL)).isEqualTo(Duration.ofMillis(250));
        assertThat(c.relay(RelayOption.PUBLISH_TIMEOUT)).isEqualTo(Duration.ofSeconds(2));
        assertThat(c.relay(RelayOption.BACKLOG_INTERVAL)).isZero();
        assertThat(c.kafkaProperties()).containsEntry("linger.ms", "20");
        assertThat(c.destinations().get("shipping").broker()).isEqualTo(Broker.RABBITMQ);
        assertThat(c.httpPort()).isZero();
    }

    @Test
    void kafkaStrictFencing_prefix_isReadAndCheckedAndOffByDefault() throws IOException {
        RelayConfig on = RelayConfig.load(file(URL, "txbox.destination.payments=kafka:payments",
                "txbox.kafka.bootstrap-servers=k:9092", "txbox.kafka.strict-fencing=orders-relay"), Map.of());
        assertThat(on.kafkaStrictFencing()).isEqualTo("orders-relay");
        assertThat(on.kafkaProperties()).doesNotContainKey("strict-fencing");
        RelayConfig off = RelayConfig.load(file(URL, "txbox.destination.payments=kafka:payments",
                "txbox.kafka.bootstrap-servers=k:9092"), Map.of());
        assertThat(off.kafkaStrictFencing()).isNull();
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.kafka.strict-fencing=no spaces"), Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("txbox.kafka.strict-fencing = \"no spaces\" (relay.properties): must be 1 to 200 characters of [A-Za-z0-9._-]");
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.kafka.transactional.id=x"), Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("txbox.kafka.transactional.id");
    }

    @Test
    void batchSize_notANumber_messageNamesKeyValueAndFile() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.batch-size=lots"), Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("txbox.relay.batch-size = \"lots\" (relay.properties): must be a whole number between 1 and 10000");
    }

    @Test
    void rabbitUri_portNotANumber_isRefusedByThePublishersRule() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.rabbitmq.uri=amqp://relay:pw-secret-5@127.0.0.1:notaport/%2f",
                "txbox.destination.s=rabbitmq:s"), Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("txbox.rabbitmq.uri (relay.properties): RabbitMQ uri \"amqp://relay:****@127.0.0.1:notaport/%2f\""
                        + " has port \"notaport\", which is not a number from 1 to 65535")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("pw-secret-5"));
    }

    @Test
    void rabbitUri_hostWithUnderscore_isRefused() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.rabbitmq.uri=amqp://u:p@rabbit_prod:5672/",
                "txbox.destination.s=rabbitmq:s"), Map.of()))
                .hasMessageContaining("host \"rabbit_prod\", which is not a valid host name");
    }

    @Test
    void rabbitUri_otherScheme_isRefused() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.rabbitmq.uri=http://rabbit:5672/"), Map.of()))
                .hasMessageContaining("txbox.rabbitmq.uri (relay.properties): RabbitMQ uri \"http://rabbit:5672/\" must start with amqp://");
    }

    @Test
    void pollInterval_badDuration_messageNamesKeyAndValue() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.poll-interval=fast"), Map.of()))
                .hasMessageContaining("txbox.relay.poll-interval = \"fast\"").hasMessageContaining("250ms");
    }

    @Test
    void env_overridesFileAndIsNamedInErrors() throws IOException {
        Path f = file(URL, "txbox.relay.batch-size=10");
        assertThat(RelayConfig.load(f, Map.of("TXBOX_RELAY_BATCH_SIZE", "20")).relay(RelayOption.BATCH_SIZE)).isEqualTo(20);
        assertThatThrownBy(() -> RelayConfig.load(f, Map.of("TXBOX_RELAY_BATCH_SIZE", "0")))
                .hasMessageContaining("txbox.relay.batch-size = \"0\" (env TXBOX_RELAY_BATCH_SIZE)");
    }

    @Test
    void env_aloneWithoutFile_isEnough() {
        RelayConfig c = RelayConfig.load(null, Map.of("TXBOX_JDBC_URL", "jdbc:postgresql://h/db",
                "TXBOX_DESTINATION_PAYMENTS", "kafka:payments", "TXBOX_KAFKA_BOOTSTRAP_SERVERS", "k:1",
                "TXBOX_KAFKA_LINGER_MS", "7", "OTHER", "x"));
        assertThat(c.destinations()).containsKey("payments");
        assertThat(c.kafkaProperties()).containsEntry("linger.ms", "7").containsEntry("bootstrap.servers", "k:1");
    }

    @Test
    void env_unknownTxboxVariable_isIgnoredAndReported() {
        RelayConfig c = RelayConfig.load(null, Map.of("TXBOX_JDBC_URL", "jdbc:postgresql://h/db", "TXBOX_JDBC_PASWORD", "x"));
        assertThat(c.ignoredEnv()).containsExactly("TXBOX_JDBC_PASWORD");
    }

    @Test
    void unknownKey_isAnErrorWithAHint() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.batchsize=5"), Map.of()))
                .hasMessageContaining("txbox.relay.batchsize (relay.properties) is not a known key; did you mean txbox.relay.batch-size?");
    }

    @Test
    void unknownKey_farFromEveryKey_stillGetsTheNearest() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.destinations.shipping=rabbitmq:shipping",
                "txbox.relay.lanes-per-worker-max=3", "relay.workers=2"), Map.of()))
                .hasMessageContaining("txbox.destinations.shipping (relay.properties) is not a known key;"
                        + " did you mean txbox.destination.shipping?")
                .hasMessageContaining("txbox.relay.lanes-per-worker-max (relay.properties) is not a known key; did you mean txbox.")
                .hasMessageContaining("relay.workers (relay.properties) is not a known key; did you mean txbox.relay.workers?"
                        + " (every key starts with txbox.)");
    }

    @Test
    void kafkaProperty_typoAndReserved_areErrors() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.kafka.linger.mss=5", "txbox.kafka.acks=1"), Map.of()))
                .hasMessageContaining("txbox.kafka.linger.mss = \"5\" (relay.properties): is not a Kafka producer property; did you mean linger.ms?")
                .hasMessageContaining("txbox.kafka.acks = \"1\" (relay.properties): must be all for the relay");
    }

    @Test
    void destination_badSyntaxAndMissingBroker_areErrors() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.destination.a=sqs:q", "txbox.destination.b=kafka:bad topic",
                "txbox.destination.c=rabbitmq:x"), Map.of()))
                .hasMessageContaining("txbox.destination.a = \"sqs:q\" (relay.properties): must be kafka:<topic> or rabbitmq:<exchange>")
                .hasMessageContaining("txbox.destination.b = \"kafka:bad topic\"")
                .hasMessageContaining("txbox.rabbitmq.uri is required because destination \"c\" goes to RabbitMQ");
    }

    @Test
    void jdbcUrl_missing_isNamed() {
        assertThatThrownBy(() -> RelayConfig.load(null, Map.of()))
                .hasMessageContaining("txbox.jdbc.url is required");
    }

    @Test
    void publishTimeout_notBelowLaneLease_isAnError() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.publish-timeout=30s", "txbox.relay.lane-lease=30s"), Map.of()))
                .hasMessageContaining("txbox.relay.publish-timeout (30s) must be shorter than txbox.relay.lane-lease (30s)");
    }

    @Test
    void schema_invalid_namesKey() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.schema=Orders;drop"), Map.of()))
                .hasMessageContaining("txbox.schema = \"Orders;drop\" (relay.properties): schema must match");
    }

    @Test
    void secrets_neverInToStringOrErrors() throws IOException {
        Path f = file("txbox.jdbc.url=jdbc:postgresql://h/db?user=a&password=url-secret-1", "txbox.jdbc.password=pw-secret-2",
                "txbox.rabbitmq.uri=amqp://guest:rabbit-secret-3@h:5672", "txbox.destination.s=rabbitmq:s",
                "txbox.kafka.sasl.jaas.config=x required password=\"jaas-secret-4\";");
        RelayConfig c = RelayConfig.load(f, Map.of());
        assertThat(c.toString()).doesNotContain("url-secret-1", "pw-secret-2", "rabbit-secret-3", "jaas-secret-4")
                .contains("amqp://guest:****@h:5672").contains("password=****");
        assertThatThrownBy(() -> RelayConfig.load(f, Map.of("TXBOX_RELAY_WORKERS", "x", "TXBOX_JDBC_PASSWORD", "")))
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("url-secret-1", "rabbit-secret-3", "jaas-secret-4"));
        assertThatThrownBy(() -> RelayConfig.load(file("txbox.jdbc.url=postgres://u:pw-5678@h/db"), Map.of()))
                .hasMessageContaining("postgres://u:****@h/db").satisfies(e -> assertThat(e.getMessage()).doesNotContain("pw-5678"));
    }

    @Test
    void poolSize_belowWorkersPlusOne_isAnError() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.workers=4", "txbox.relay.listen=false",
                "txbox.jdbc.pool-size=4"), Map.of()))
                .hasMessageContaining("txbox.jdbc.pool-size = \"4\" (relay.properties): must be at least txbox.relay.workers + 1 (5)");
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.workers=4", "txbox.jdbc.pool-size=5"), Map.of()))
                .hasMessageContaining("must be at least txbox.relay.workers + 2 (6): each worker keeps a connection, health"
                        + " checks need one more, and txbox.relay.listen keeps one");
    }

    @Test
    void listen_notABoolean_isAnError() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.listen=yes"), Map.of()))
                .hasMessageContaining("txbox.relay.listen = \"yes\" (relay.properties): must be true or false");
    }

    @Test
    void requireDestinations_none_isAnError() throws IOException {
        RelayConfig c = RelayConfig.load(file(URL), Map.of());
        assertThatThrownBy(c::requireDestinations).hasMessageContaining("no destination is configured");
    }

    @Test
    void file_missing_isNamed() {
        assertThatThrownBy(() -> RelayConfig.load(dir.resolve("nope.properties"), Map.of()))
                .hasMessageContaining("nope.properties does not exist");
    }

    @Test
    void relayKeys_followTheBuildersRules_maxAttemptsHasNoCapOfItsOwn() throws IOException {
        RelayConfig c = RelayConfig.load(file(URL, "txbox.relay.max-attempts=5000000",
                "txbox.relay.backlog-interval=0"), Map.of());
        assertThat(c.relay(RelayOption.MAX_ATTEMPTS)).isEqualTo(5_000_000);
        assertThat(c.relay(RelayOption.BACKLOG_INTERVAL)).isZero();
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.relay.max-attempts=0",
                        "txbox.relay.initial-backoff=2m", "txbox.relay.max-backoff=1m", "txbox.relay.id=a b"), Map.of()))
                .hasMessageContaining("txbox.relay.max-attempts = \"0\" (relay.properties): must be at least 1")
                .hasMessageContaining("txbox.relay.id = \"a b\" (relay.properties): must be 1-200 characters of [A-Za-z0-9._:-]")
                .hasMessageContaining("txbox.relay.initial-backoff (2m) must not exceed txbox.relay.max-backoff (1m)");
    }

    @Test
    void destination_topicAndExchange_followThePublishersRules() throws IOException {
        assertThatThrownBy(() -> RelayConfig.load(file(URL, "txbox.kafka.bootstrap-servers=k:9092",
                        "txbox.destination.a=kafka:..", "txbox.destination.b=rabbitmq:" + "x".repeat(256)), Map.of()))
                .hasMessageContaining("txbox.destination.a = \"kafka:..\" (relay.properties): after kafka: Kafka topic must be")
                .hasMessageContaining("txbox.destination.b = ").hasMessageContaining("after rabbitmq: RabbitMQ exchange must be 1-255");
    }

    /** A value other than the default for every relay option: as the file spells it, and as the Java builder sets it. */
    static final Map<String, String> RELAY_TEXT = Map.ofEntries(Map.entry("id", "r-1"), Map.entry("workers", "7"),
            Map.entry("batch-size", "300"), Map.entry("poll-interval", "7ms"), Map.entry("listen", "false"),
                Map.entry("publish-timeout", "3s"),
            Map.entry("lane-lease", "9s"), Map.entry("max-attempts", "4"), Map.entry("initial-backoff", "20ms"),
            Map.entry("max-backoff", "2s"), Map.entry("backlog-interval", "0s"), Map.entry("shutdown-timeout", "1s"),
            Map.entry("move-on-destinations", "events,audit"));

    static Relay.Builder javaBuilder() {
        return Relay.builder().relayId("r-1").workers(7).batchSize(300).pollInterval(Duration.ofMillis(7)).listen(false)
                .publishTimeout(Duration.ofSeconds(3)).laneLease(Duration.ofSeconds(9)).maxAttempts(4)
                .backoff(Duration.ofMillis(20), Duration.ofSeconds(2)).backlogInterval(Duration.ZERO)
                .shutdownTimeout(Duration.ofSeconds(1)).moveOnDestinations("events", "audit");
    }

    @Test
    void relayOptions_everyKey_reachesTheSameBuilderSettingAsTheJavaSetter() throws IOException {
        assertThat(RELAY_TEXT.keySet()).containsExactlyInAnyOrderElementsOf(
                RelayOption.all().stream().map(RelayOption::key).toList());
        java.util.List<String> lines = new java.util.ArrayList<>(java.util.List.of(URL));
        RELAY_TEXT.forEach((k, v) -> lines.add("txbox.relay." + k + "=" + v));
        RelayConfig c = RelayConfig.load(file(lines.toArray(String[]::new)), Map.of());
        Relay.Builder fromFile = c.applyTo(Relay.builder());
        Relay.Builder fromJava = javaBuilder();
        for (RelayOption<?> o : RelayOption.all()) {
            assertThat(o.get(fromFile)).as(o.key()).isEqualTo(o.get(fromJava)).isNotEqualTo(o.defaultValue())
                    .isEqualTo(c.relay(o));
        }
    }
}
