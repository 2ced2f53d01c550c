package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TxboxSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The executable jar as an operator runs it, through the launcher beside it ({@code
 * target/txbox-relay}, its JVM defaults and class-data archive): a separate process with a config
 * file, publishing to a real Kafka broker and RabbitMQ, scraped over HTTP, stopped with SIGTERM.
 */
class StandaloneRelayJarIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    /** A schema (a database on MariaDB) of each kind, for what runs on every database. */
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static final Path JAR = Path.of("target", "txbox-relay.jar");
    static final Path LAUNCHER = Path.of("target", "txbox-relay");
    static final String DB_SECRET = "jar-db-secret-7731";
    static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    static final Pattern PORT = Pattern.compile("HTTP port (\\d+)");

    @TempDir
    static Path dir;

    static TxboxTables tables;
    static String topic;
    static String exchange;
    static String queue;
    static com.rabbitmq.client.Connection rabbit;
    static Channel channel;
    static final HttpClient http = HttpClient.newHttpClient();
    static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void setUp() throws Exception {
        assertThat(JAR).as("built in the package phase").exists();
        assertThat(LAUNCHER).as("copied beside the jar in the package phase").isExecutable();
        // the launcher's one-off class-data archive, written here so no test's start waits for it
        Child prepare = jar("--version");
        assertThat(prepare.process().waitFor(180, TimeUnit.SECONDS)).isTrue();
        assertThat(prepare.process().exitValue()).as(prepare.stderr()).isZero();
        tables = TxboxTables.inSchema(TxboxSchema.migrated(PG).name());
        topic = KafkaBroker.shared().uniqueTopic("jar-orders");
        KafkaBroker.shared().createTopic(topic, 1);
        ConnectionFactory f = new ConnectionFactory();
        f.setHost(System.getenv().getOrDefault("TXBOX_TEST_RABBIT_HOST", "127.0.0.1"));
        rabbit = f.newConnection("jar-it");
        channel = rabbit.createChannel();
        exchange = "txbox-jar-" + UUID.randomUUID().toString().substring(0, 8);
        channel.exchangeDeclare(exchange, "fanout", false, true, null);
        queue = channel.queueDeclare("", false, true, true, null).getQueue();
        channel.queueBind(queue, exchange, "");
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (rabbit != null) {
            rabbit.close();
        }
    }

    static Path config(String name, String... extra) throws IOException {
        List<String> lines = new ArrayList<>(List.of(
                "txbox.jdbc.url=" + PG.jdbcUrl(),
                "txbox.jdbc.user=" + PG.user(),
                // trust authentication ignores it; it is here to prove it is never printed
                "txbox.jdbc.password=" + DB_SECRET,
                "txbox.schema=" + PG.schema(),
                "txbox.relay.poll-interval=50ms",
                "txbox.relay.backlog-interval=200ms",
                "txbox.relay.shutdown-timeout=10s",
                "txbox.kafka.bootstrap-servers=" + KafkaBroker.shared().bootstrapServers(),
                "txbox.rabbitmq.uri=amqp://guest:guest@" + System.getenv().getOrDefault("TXBOX_TEST_RABBIT_HOST", "127.0.0.1") + ":5672",
                "txbox.destination.orders=kafka:" + topic,
                "txbox.destination.shipping=rabbitmq:" + exchange,
                "txbox.http.host=127.0.0.1",
                "txbox.http.port=0"));
        lines.addAll(List.of(extra));
        Path file = dir.resolve(name);
        Files.writeString(file, String.join("\n", lines));
        return file;
    }

    /** The jar in a child JVM, stdout and stderr captured to files. */
    record Child(Process process, Path out, Path err) {
        String stdout() throws IOException {
            return Files.readString(out, StandardCharsets.UTF_8);
        }

        String stderr() throws IOException {
            return Files.readString(err, StandardCharsets.UTF_8);
        }
    }

    /** The launcher with its defaults, on this JVM's java, the class-data archive in {@code archive}. */
    static Child jar(String... args) throws IOException {
        return launch(dir.resolve("txbox-relay.jsa"), args);
    }

    static Child launch(Path archive, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(LAUNCHER.toString()));
        command.addAll(List.of(args));
        String id = UUID.randomUUID().toString().substring(0, 8);
        Path out = dir.resolve(id + ".out");
        Path err = dir.resolve(id + ".err");
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        // the config file is the whole truth here: no TXBOX_* from the build's environment
        pb.environment().keySet().removeIf(k -> k.startsWith("TXBOX_"));
        pb.environment().put("JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        pb.environment().put("TXBOX_CDS_ARCHIVE", archive.toString());
        return new Child(pb.start(), out, err);
    }

    @Test
    void launcher_firstLaunchWritesTheClassDataArchive_laterLaunchesUseIt() throws Exception {
        Path archive = dir.resolve("first-launch.jsa");
        Child first = launch(archive, "--version");
        assertThat(first.process().waitFor(180, TimeUnit.SECONDS)).isTrue();
        assertThat(first.process().exitValue()).as(first.stderr()).isZero();
        assertThat(first.stdout()).startsWith("txbox-relay ");
        assertThat(first.stderr()).contains("writing the class-data archive " + archive);
        assertThat(archive).isNotEmptyFile();

        // the archive is mapped, not loaded again: -Xshare:on would refuse to start without it
        Child second = launch(archive, "--version");
        assertThat(second.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(second.process().exitValue()).as(second.stderr()).isZero();
        assertThat(second.stdout()).startsWith("txbox-relay ");
        assertThat(second.stderr()).doesNotContain("class-data archive");
        ProcessBuilder strict = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xshare:on", "-XX:SharedArchiveFile=" + archive, "-jar", LAUNCHER.toAbsolutePath().getParent()
                        .resolve("txbox-relay.jar").toString(), "--version").redirectErrorStream(true);
        Process p = strict.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
    }

    static HttpResponse<String> get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    }

    static double published(String metrics, String destination) {
        Matcher m = Pattern.compile("(?m)^txbox_relay_published_total\\{[^}]*destination=\"" + destination + "\"[^}]*} ([0-9.eE+]+)$")
                .matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    static void send(String key, String destination, int count) throws Exception {
        Outbox outbox = Outbox.builder().tables(tables).build();
        try (Connection c = PG.connection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < count; i++) {
                outbox.send(c, OutboxMessage.builder(StepKey.of(key + i, "step"), destination).routingKey(key)
                        .payload("{\"n\":" + i + "}").contentType("application/json").traceparent(TRACEPARENT).build());
            }
            c.commit();
        }
    }

    @Test
    void run_publishesToKafkaAndRabbit_servesHealthAndMetrics_andStopsCleanlyOnSigterm() throws Exception {
        Child child = jar("run", "--config", config("run.properties").toString());
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> PORT.matcher(child.stderr()).find() || !child.process().isAlive());
            Matcher pm = PORT.matcher(child.stderr());
            assertThat(pm.find()).as(child.stderr()).isTrue();
            int port = Integer.parseInt(pm.group(1));

            assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
            await().atMost(Duration.ofSeconds(20)).until(() -> get(port, "/health/ready").statusCode() == 200);
            JsonNode ready = JSON.readTree(get(port, "/health").body());
            assertThat(ready.at("/checks/database").asText()).isEqualTo("UP");
            assertThat(ready.at("/checks/kafka:orders").asText()).isEqualTo("UP");
            assertThat(ready.at("/checks/rabbitmq:shipping").asText()).isEqualTo("UP");

            assertThat(published(get(port, "/metrics").body(), "orders")).as("registered at zero before any row").isZero();

            send("order-1", "orders", 3);
            send("ship-1", "shipping", 2);

            await().atMost(Duration.ofSeconds(30)).until(() -> published(get(port, "/metrics").body(), "orders") >= 3
                    && published(get(port, "/metrics").body(), "shipping") >= 2);
            String metrics = get(port, "/metrics").body();
            assertThat(metrics).contains("txbox_relay_publish_latency_seconds_count", "txbox_relay_failed_total",
                    "txbox_relay_dead_lettered_total", "txbox_outbox_backlog_rows", "txbox_outbox_oldest_age_seconds",
                    "hikaricp_connections", "jvm_memory_used_bytes");
            assertThat(metrics).as("counters registered at zero keep their descriptions")
                    .contains("# HELP txbox_relay_published_total outbox rows the broker confirmed",
                            "# HELP txbox_relay_failed_total outbox rows not confirmed");

            List<ConsumerRecord<byte[], byte[]>> records = consume(topic, 3);
            assertThat(records).hasSize(3);
            for (ConsumerRecord<byte[], byte[]> r : records) {
                Header tp = r.headers().lastHeader("traceparent");
                assertThat(tp).as("traceparent header").isNotNull();
                assertThat(new String(tp.value(), StandardCharsets.UTF_8)).isEqualTo(TRACEPARENT);
            }
            List<GetResponse> messages = new ArrayList<>();
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                GetResponse g = channel.basicGet(queue, true);
                if (g != null) {
                    messages.add(g);
                }
                return messages.size() >= 2;
            });
            assertThat(String.valueOf(messages.get(0).getProps().getHeaders().get("traceparent"))).isEqualTo(TRACEPARENT);

            child.process().destroy(); // SIGTERM on Linux
            assertThat(child.process().waitFor(30, TimeUnit.SECONDS)).as("stopped within 30 s").isTrue();
            String log = child.stderr();
            assertThat(child.process().exitValue()).as(log).isZero();
            assertThat(log).contains("SIGTERM received, stopping", "stopped cleanly");
            assertThat(log + child.stdout()).doesNotContain(DB_SECRET).doesNotContain("guest:guest");
        } finally {
            child.process().destroyForcibly();
        }
    }

    static List<ConsumerRecord<byte[], byte[]>> consume(String topic, int expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaBroker.shared().bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "jar-it-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
                return out.size() >= expected;
            });
        }
        return out;
    }

    @Test
    void run_rabbitDownAtStart_startsNotReadyNamingRabbitmq_andStopsCleanly() throws Exception {
        // a later line of a properties file wins: nothing listens on port 1
        Child child = jar("run", "--config", config("rabbit-down.properties",
                "txbox.rabbitmq.uri=amqp://guest:guest@127.0.0.1:1").toString());
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> PORT.matcher(child.stderr()).find() || !child.process().isAlive());
            Matcher pm = PORT.matcher(child.stderr());
            assertThat(pm.find()).as(child.stderr()).isTrue();
            int port = Integer.parseInt(pm.group(1));

            assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
            HttpResponse<String> health = get(port, "/health");
            assertThat(health.statusCode()).isEqualTo(503);
            JsonNode body = JSON.readTree(health.body());
            assertThat(body.at("/checks/database").asText()).isEqualTo("UP");
            assertThat(body.at("/checks/rabbitmq:shipping").asText()).startsWith("DOWN: rabbitmq not connected");

            child.process().destroy();
            assertThat(child.process().waitFor(30, TimeUnit.SECONDS)).as("stopped within 30 s").isTrue();
            String log = child.stderr();
            assertThat(child.process().exitValue()).as(log).isZero();
            assertThat(log).contains("rabbitmq unreachable, starting anyway", "stopped cleanly").doesNotContain("guest:guest");
        } finally {
            child.process().destroyForcibly();
        }
    }

    @Test
    void run_invalidConfig_exitsTwoNamingKeyAndValue_withoutSecrets() throws Exception {
        Child child = jar("run", "--config", config("bad.properties", "txbox.relay.batch-size=huge",
                "txbox.relay.poll-intervall=5s").toString());
        assertThat(child.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        String err = child.stderr();
        assertThat(child.process().exitValue()).as(err).isEqualTo(2);
        assertThat(err).contains("txbox.relay.batch-size = \"huge\" (bad.properties): must be a whole number between 1 and 10000")
                .contains("txbox.relay.poll-intervall (bad.properties) is not a known key; did you mean txbox.relay.poll-interval?")
                .doesNotContain(DB_SECRET);
    }

    @Test
    void status_throughTheJar_printsJson() throws Exception {
        // a schema of its own with known contents: 3 pending outbox rows, 2 dead inbox entries
        String schema = TxboxSchema.migrated(PG, "status").name();
        TxboxTables statusTables = TxboxTables.inSchema(schema);
        Outbox statusOutbox = Outbox.builder().tables(statusTables).build();
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < 3; i++) {
                statusOutbox.send(c, OutboxMessage.builder(StepKey.of("status-" + i, "s"), "orders").payload("x").build());
            }
            try (var st = c.createStatement()) {
                st.execute("INSERT INTO " + statusTables.qualified(statusTables.inboxTable())
                        + " (consumer, message_key, status, attempts, last_error) VALUES"
                        + " ('payments', 'dead-1', 'DEAD', 3, 'boom'), ('payments', 'dead-2', 'DEAD', 3, 'boom'),"
                        + " ('payments', 'done-1', 'COMPLETED', 1, NULL)");
            }
            c.commit();
        }
        Child child = jar("status", "--json", "--config", config("status.properties", "txbox.schema=" + schema).toString());
        assertThat(child.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(child.process().exitValue()).as(child.stderr()).isZero();
        JsonNode status = JSON.readTree(child.stdout());
        assertThat(status.at("/outbox/pending").asLong()).as(child.stdout()).isEqualTo(3);
        assertThat(status.at("/outbox/dead").asLong()).as(child.stdout()).isZero();
        assertThat(status.at("/inbox/dead").asLong()).as(child.stdout()).isEqualTo(2);
        assertThat(Map.of("out", child.stdout(), "err", child.stderr()).toString()).doesNotContain(DB_SECRET);
    }

    /**
     * On each database: {@code migrate}, {@code run} (one route, one row without a route), then
     * {@code status}, {@code dead list} and {@code dead retry} through the jar, so the jar carries
     * each database's driver and every command speaks its SQL.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void jar_onEachDatabase_migratesRelaysAndReportsDeadLetters(TestDatabase db) throws Exception {
        String dbTopic = KafkaBroker.shared().uniqueTopic("jar-" + db.kind().name().toLowerCase());
        KafkaBroker.shared().createTopic(dbTopic, 1);
        Path file = dir.resolve("db-" + db.kind().name().toLowerCase() + ".properties");
        Files.writeString(file, String.join("\n",
                "txbox.jdbc.url=" + db.jdbcUrl(),
                "txbox.jdbc.user=" + db.user(),
                "txbox.jdbc.password=" + db.password(),
                "txbox.schema=" + db.schema(),
                "txbox.relay.poll-interval=50ms",
                "txbox.kafka.bootstrap-servers=" + KafkaBroker.shared().bootstrapServers(),
                "txbox.destination.orders=kafka:" + dbTopic,
                "txbox.http.host=127.0.0.1",
                "txbox.http.port=0"));
        Child migrate = jar("migrate", "--config", file.toString());
        assertThat(migrate.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(migrate.process().exitValue()).as(migrate.stderr()).isZero();

        Outbox outbox = Outbox.builder().tables(TxboxTables.inSchema(db.schema())).build();
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < 3; i++) {
                outbox.send(c, OutboxMessage.builder(StepKey.of("db-" + i, "step"), "orders").routingKey("k")
                        .payload("{\"n\":" + i + "}").header("x-tenant", "t" + i).build());
            }
            outbox.send(c, OutboxMessage.builder(StepKey.of("lost-0", "step"), "nowhere").payload("{}").build());
            c.commit();
        }

        Child run = jar("run", "--config", file.toString());
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> PORT.matcher(run.stderr()).find() || !run.process().isAlive());
            Matcher pm = PORT.matcher(run.stderr());
            assertThat(pm.find()).as(run.stderr()).isTrue();
            int port = Integer.parseInt(pm.group(1));
            await().atMost(Duration.ofSeconds(20)).until(() -> get(port, "/health/ready").statusCode() == 200);
            assertThat(JSON.readTree(get(port, "/health").body()).at("/checks/database").asText()).isEqualTo("UP");
            List<ConsumerRecord<byte[], byte[]>> records = consume(dbTopic, 3);
            assertThat(records).extracting(r -> new String(r.headers().lastHeader("x-tenant").value(), StandardCharsets.UTF_8))
                    .containsExactlyInAnyOrder("t0", "t1", "t2");
            await().atMost(Duration.ofSeconds(20)).until(() -> published(get(port, "/metrics").body(), "orders") >= 3);
            run.process().destroy();
            assertThat(run.process().waitFor(30, TimeUnit.SECONDS)).as("stopped within 30 s").isTrue();
            assertThat(run.process().exitValue()).as(run.stderr()).isZero();
        } finally {
            run.process().destroyForcibly();
        }

        JsonNode status = JSON.readTree(admin(file, "status", "--json"));
        assertThat(status.at("/outbox/pending").asLong()).as(status.toString()).isZero();
        assertThat(status.at("/outbox/dead").asLong()).as(status.toString()).isEqualTo(1);
        JsonNode dead = JSON.readTree(admin(file, "dead", "list", "--json"));
        assertThat(dead).hasSize(1);
        assertThat(dead.get(0).get("stepKey").asText()).isEqualTo("lost-0:step");
        assertThat(dead.get(0).get("reason").asText()).contains("no route").contains("nowhere");
        assertThat(JSON.readTree(admin(file, "dead", "retry", "--all", "--json")).get("requeued").asInt()).isEqualTo(1);
        assertThat(JSON.readTree(admin(file, "status", "--json")).at("/outbox/pending").asLong()).isEqualTo(1);
    }

    /** Runs an admin command through the jar and returns its stdout, after checking it exited 0. */
    static String admin(Path config, String... command) throws Exception {
        String[] args = java.util.Arrays.copyOf(command, command.length + 2);
        args[command.length] = "--config";
        args[command.length + 1] = config.toString();
        Child child = jar(args);
        assertThat(child.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(child.process().exitValue()).as(child.stderr()).isZero();
        return child.stdout();
    }
}
