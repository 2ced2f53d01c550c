package io.txbox.relay.standalone;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.TxboxTables;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayOption;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.relay.standalone.ConfigSource.Raw;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The validated configuration of the standalone relay process and its admin CLI. Immutable;
 * made by {@link #load}, which checks every key at once and names each bad key, its value and
 * where the value came from. Secret values never appear in {@link #toString()} or in a message.
 *
 * <p>There is one rule set, the library's: the relay keys go through {@link Relay.Builder}'s
 * setters and {@code build()}, the Kafka keys through {@link KafkaPublisher.Builder}, the RabbitMQ
 * URI through {@link RabbitPublisher.Builder#uri}, topic and exchange names through the
 * publishers' own name rules; their {@link ConfigException}s are shown with the key, value and
 * origin (option names and durations written as in the file). Only what the builders don't
 * know is checked here: the syntax of numbers and durations, the pool, HTTP and health keys,
 * which broker a destination needs, and unknown keys.
 *
 * <p>Keys (file: Java properties; every key can be overridden by an environment variable, upper
 * case with dots and dashes as underscores, for example {@code TXBOX_JDBC_PASSWORD}):
 * <table>
 * <caption>config keys</caption>
 * <tr><th>key</th><th>default</th><th>meaning</th></tr>
 * <tr><td>txbox.jdbc.url</td><td>required</td><td>JDBC URL of the database holding the outbox</td></tr>
 * <tr><td>txbox.jdbc.user, txbox.jdbc.password</td><td>none</td><td>login</td></tr>
 * <tr><td>txbox.jdbc.pool-size</td><td>workers + 3</td><td>connections: one per worker, plus health and admin, and one to listen</td></tr>
 * <tr><td>txbox.jdbc.connection-timeout</td><td>10s</td><td>longest wait for a pooled connection</td></tr>
 * <tr><td>txbox.schema, txbox.table-prefix</td><td>public, txbox_</td><td>where the txbox tables live</td></tr>
 * <tr><td>txbox.relay.&lt;key&gt;</td><td>the {@link Relay} defaults</td><td>every {@link RelayOption}, by its
 *     key: id, workers, batch-size, poll-interval, listen, publish-timeout, lane-lease, max-attempts, initial-backoff,
 *     max-backoff, backlog-interval, shutdown-timeout</td></tr>
 * <tr><td>txbox.kafka.bootstrap-servers</td><td>none</td><td>required when a destination goes to Kafka</td></tr>
 * <tr><td>txbox.kafka.strict-fencing</td><td>off</td><td>a transactional id prefix: turns on Kafka strict
 *     fencing (per-lane transactions; consumers need isolation.level=read_committed)</td></tr>
 * <tr><td>txbox.kafka.&lt;producer property&gt;</td><td></td><td>any Kafka producer property, for example {@code txbox.kafka.linger.ms}</td></tr>
 * <tr><td>txbox.rabbitmq.uri</td><td>none</td><td>{@code amqp://user:password@host:5672/vhost} (the default vhost is {@code %2f});
 *     required when a destination goes to RabbitMQ; checked by {@code RabbitPublisher.Builder.uri}</td></tr>
 * <tr><td>txbox.destination.&lt;name&gt;</td><td>at least one for {@code run}</td><td>{@code kafka:<topic>} or {@code rabbitmq:<exchange>}</td></tr>
 * <tr><td>txbox.http.host, txbox.http.port</td><td>0.0.0.0, 8080</td><td>/health and /metrics; port 0 picks a free port</td></tr>
 * <tr><td>txbox.health.timeout</td><td>2s</td><td>bound on each readiness check</td></tr>
 * </table>
 */
public final class RelayConfig {
    /** Default HTTP port: {@value}. */
    public static final int DEFAULT_HTTP_PORT = 8080;
    /** Default HTTP bind address: {@value}. */
    public static final String DEFAULT_HTTP_HOST = "0.0.0.0";
    /** Default bound on each readiness check: 2 s. */
    public static final Duration DEFAULT_HEALTH_TIMEOUT = Duration.ofSeconds(2);
    /** Default wait for a pooled connection: 10 s. */
    public static final Duration DEFAULT_CONNECTION_TIMEOUT = Duration.ofSeconds(10);
    /** Largest pool size accepted: {@value}. */
    public static final int MAX_POOL_SIZE = 200;

    static final String JDBC_URL = "txbox.jdbc.url";
    static final String JDBC_USER = "txbox.jdbc.user";
    static final String JDBC_PASSWORD = "txbox.jdbc.password";
    static final String JDBC_POOL_SIZE = "txbox.jdbc.pool-size";
    static final String JDBC_CONNECTION_TIMEOUT = "txbox.jdbc.connection-timeout";
    static final String SCHEMA = "txbox.schema";
    static final String TABLE_PREFIX = "txbox.table-prefix";
    /** Before each {@link RelayOption#key()}: {@code txbox.relay.lane-lease}. */
    static final String RELAY_PREFIX = "txbox.relay.";
    static final String KAFKA_BOOTSTRAP = "txbox.kafka.bootstrap-servers";
    static final String KAFKA_PREFIX = "txbox.kafka.";
    static final String KAFKA_STRICT_FENCING = "txbox.kafka.strict-fencing";
    static final String RABBITMQ_URI = "txbox.rabbitmq.uri";
    static final String DESTINATION_PREFIX = "txbox.destination.";
    static final String HTTP_HOST = "txbox.http.host";
    static final String HTTP_PORT = "txbox.http.port";
    static final String HEALTH_TIMEOUT = "txbox.health.timeout";

    /** Every fixed key: the relay's options come from {@link RelayOption#all()}. */
    static final List<String> FIXED_KEYS = fixedKeys();

    private static List<String> fixedKeys() {
        List<String> keys = new ArrayList<>(List.of(JDBC_URL, JDBC_USER, JDBC_PASSWORD, JDBC_POOL_SIZE,
                JDBC_CONNECTION_TIMEOUT, SCHEMA, TABLE_PREFIX));
        RelayOption.all().forEach(o -> keys.add(relayKey(o)));
        keys.addAll(List.of(KAFKA_BOOTSTRAP, KAFKA_STRICT_FENCING, RABBITMQ_URI, HTTP_HOST, HTTP_PORT, HEALTH_TIMEOUT));
        return List.copyOf(keys);
    }

    /** The key of a relay option here: {@code txbox.relay.lane-lease}. */
    static String relayKey(RelayOption<?> option) {
        return RELAY_PREFIX + option.key();
    }

    /** The broker a destination goes to. */
    public enum Broker {
        KAFKA("kafka"), RABBITMQ("rabbitmq");

        private final String prefix;

        Broker(String prefix) {
            this.prefix = prefix;
        }

        /** The name used in config values and metric tags: {@code kafka}, {@code rabbitmq}. */
        public String id() {
            return prefix;
        }
    }

    /**
     * Where rows of one outbox destination are published.
     *
     * @param name the destination written by {@code OutboxMessage.builder(stepKey, name)}
     * @param broker Kafka or RabbitMQ
     * @param target the Kafka topic or RabbitMQ exchange
     */
    public record Destination(String name, Broker broker, String target) {
        @Override
        public String toString() {
            return name + " -> " + broker.id() + ":" + target;
        }
    }

    private final String jdbcUrl;
    private final @Nullable String jdbcUser;
    private final @Nullable String jdbcPassword;
    private final int poolSize;
    private final Duration connectionTimeout;
    private final TxboxTables tables;
    /** Every relay option's value, defaults included (the relay id may be null). */
    private final Map<RelayOption<?>, @Nullable Object> relay;
    private final Map<String, String> kafka;
    private final @Nullable String kafkaStrictFencing;
    private final @Nullable String rabbitUri;
    private final Map<String, Destination> destinations;
    private final String httpHost;
    private final int httpPort;
    private final Duration healthTimeout;
    private final Map<String, String> shown;
    private final List<String> ignoredEnv;

    private RelayConfig(ConfigReader r, List<String> ignoredEnv) {
        this.jdbcUrl = r.jdbcUrl;
        this.jdbcUser = r.jdbcUser;
        this.jdbcPassword = r.jdbcPassword;
        this.poolSize = r.poolSize;
        this.connectionTimeout = r.connectionTimeout;
        this.tables = r.tables;
        Map<RelayOption<?>, @Nullable Object> values = new LinkedHashMap<>();
        RelayOption.all().forEach(o -> values.put(o, o.get(r.relay)));
        this.relay = Collections.unmodifiableMap(values);
        this.kafka = Collections.unmodifiableMap(new LinkedHashMap<>(r.kafka));
        this.kafkaStrictFencing = r.kafkaStrictFencing;
        this.rabbitUri = r.rabbitUri;
        this.destinations = Collections.unmodifiableMap(new LinkedHashMap<>(r.destinations));
        this.httpHost = r.httpHost;
        this.httpPort = r.httpPort;
        this.healthTimeout = r.healthTimeout;
        this.shown = Collections.unmodifiableMap(r.shown);
        this.ignoredEnv = ignoredEnv;
    }

    /**
     * Reads {@code file} (optional: everything may come from the environment), overlays the
     * {@code TXBOX_*} variables of {@code env}, and checks every key.
     *
     * @throws ConfigException listing every problem, one per line, each naming the key, its
     *     value (masked if secret) and its origin
     */
    public static RelayConfig load(@Nullable Path file, Map<String, String> env) {
        List<String> known = new ArrayList<>(FIXED_KEYS);
        for (String name : KafkaNames.producerConfigNames()) {
            known.add(KAFKA_PREFIX + name);
        }
        ConfigSource source = ConfigSource.load(file, env, known);
        ConfigReader reader = new ConfigReader(source.values());
        reader.read();
        if (!reader.errors.isEmpty()) {
            throw new ConfigException("invalid configuration"
                    + (file == null ? "" : " in " + file) + ":\n  " + String.join("\n  ", reader.errors));
        }
        return new RelayConfig(reader, source.ignoredEnv());
    }

    /**
     * Reads the configuration as the admin commands ({@code migrate}, {@code status}, {@code
     * dead ...}, {@code inbox ...}) need it: only {@code txbox.jdbc.*}, {@code txbox.schema} and
     * {@code txbox.table-prefix} are read and checked; every other key (destinations, brokers,
     * relay tuning, HTTP) is ignored, so a file shared with {@code run} works even while its
     * broker settings are incomplete. The other accessors return their defaults.
     *
     * @throws ConfigException listing every problem with the keys that are read
     */
    public static RelayConfig loadForAdmin(@Nullable Path file, Map<String, String> env) {
        ConfigSource source = ConfigSource.load(file, env, FIXED_KEYS);
        Map<String, Raw> admin = new TreeMap<>();
        source.values().forEach((k, v) -> {
            if (isAdminKey(k)) {
                admin.put(k, v);
            }
        });
        ConfigReader reader = new ConfigReader(admin);
        reader.read();
        if (!reader.errors.isEmpty()) {
            throw new ConfigException("invalid configuration"
                    + (file == null ? "" : " in " + file) + ":\n  " + String.join("\n  ", reader.errors));
        }
        return new RelayConfig(reader, List.of());
    }

    /** The keys the admin commands read. */
    static boolean isAdminKey(String key) {
        return key.startsWith("txbox.jdbc.") || key.equals(SCHEMA) || key.equals(TABLE_PREFIX);
    }

    /**
     * What {@code run} would trip on that reading the configuration cannot see: each host named
     * by {@value #JDBC_URL}, {@value #RABBITMQ_URI} and {@value #KAFKA_BOOTSTRAP} that no name
     * lookup resolves, one line per host naming the key. Looks names up; connects to nothing.
     */
    public List<String> unknownHosts() {
        Map<String, List<String>> byKey = new LinkedHashMap<>();
        byKey.put(JDBC_URL, jdbcHosts(jdbcUrl));
        if (rabbitUri != null) {
            byKey.put(RABBITMQ_URI, rabbitHosts(rabbitUri));
        }
        String bootstrap = kafka.get("bootstrap.servers");
        if (bootstrap != null) {
            byKey.put(KAFKA_BOOTSTRAP, kafkaHosts(bootstrap));
        }
        List<String> problems = new ArrayList<>();
        byKey.forEach((key, hosts) -> {
            for (String host : hosts) {
                try {
                    InetAddress.getAllByName(host);
                } catch (UnknownHostException e) {
                    problems.add(key + ": host " + Texts.quote(host) + " is unknown (no name lookup resolves it)");
                }
            }
        });
        return problems;
    }

    /** The hosts of a {@code jdbc:<driver>://host[:port][,host[:port]]/db} URL; none for other forms. */
    static List<String> jdbcHosts(String url) {
        int start = url.indexOf("//");
        if (start < 0) {
            return List.of();
        }
        String rest = url.substring(start + 2);
        int end = rest.length();
        for (char c : new char[] {'/', '?', ';'}) {
            int i = rest.indexOf(c);
            if (i >= 0 && i < end) {
                end = i;
            }
        }
        String authority = rest.substring(0, end);
        authority = authority.substring(authority.lastIndexOf('@') + 1);
        if (authority.contains("(")) {
            return List.of(); // MariaDB's address=(host=..) form: left to the driver
        }
        return kafkaHosts(authority);
    }

    /** The hosts of an {@code amqp://user:pass@host:port/vhost} URI. */
    static List<String> rabbitHosts(String uri) {
        try {
            String host = new URI(uri).getHost();
            return host == null ? List.of() : List.of(host);
        } catch (URISyntaxException e) {
            return List.of();
        }
    }

    /** The hosts of a {@code host:port,host:port} list; IPv6 literals in brackets kept without them. */
    static List<String> kafkaHosts(String servers) {
        List<String> hosts = new ArrayList<>();
        for (String server : servers.split(",")) {
            String s = server.trim();
            String host;
            if (s.startsWith("[")) {
                int close = s.indexOf(']');
                host = close < 0 ? s.substring(1) : s.substring(1, close);
            } else {
                int colon = s.lastIndexOf(':');
                host = colon < 0 ? s : s.substring(0, colon);
            }
            if (!host.isEmpty()) {
                hosts.add(host);
            }
        }
        return hosts;
    }

    /**
     * Checks what {@code run} needs beyond what the admin commands need: at least one
     * destination.
     *
     * @throws ConfigException if none is configured
     */
    public RelayConfig requireDestinations() {
        if (destinations.isEmpty()) {
            throw new ConfigException("invalid configuration:\n  no destination is configured: add "
                    + DESTINATION_PREFIX + "<name>=kafka:<topic> or " + DESTINATION_PREFIX + "<name>=rabbitmq:<exchange>");
        }
        return this;
    }

    public String jdbcUrl() {
        return jdbcUrl;
    }

    public @Nullable String jdbcUser() {
        return jdbcUser;
    }

    /** The database password; never log it. */
    public @Nullable String jdbcPassword() {
        return jdbcPassword;
    }

    public int poolSize() {
        return poolSize;
    }

    public Duration connectionTimeout() {
        return connectionTimeout;
    }

    public TxboxTables tables() {
        return tables;
    }

    /** The value of a relay option, from {@code txbox.relay.<key>} or its default. */
    public <T> @Nullable T relay(RelayOption<T> option) {
        return option.type().cast(relay.get(option));
    }

    /** Sets every relay option on {@code builder}, as read (the relay id only if one is set). */
    public Relay.Builder applyTo(Relay.Builder builder) {
        RelayOption.all().forEach(o -> copy(o, builder));
        return builder;
    }

    private <T> void copy(RelayOption<T> option, Relay.Builder builder) {
        T value = relay(option);
        if (value != null) {
            option.set(builder, value);
        }
    }

    /** Kafka producer properties, {@code bootstrap.servers} included; empty when Kafka is not configured. */
    public Map<String, String> kafkaProperties() {
        return kafka;
    }

    /** The RabbitMQ URI with its credentials; never log it (use {@link Redaction#url}). */
    /**
     * The transactional id prefix of Kafka strict fencing ({@code txbox.kafka.strict-fencing}),
     * or null when it is off; see {@code KafkaPublisher.Builder.strictFencing}.
     */
    public @Nullable String kafkaStrictFencing() {
        return kafkaStrictFencing;
    }

    public @Nullable String rabbitUri() {
        return rabbitUri;
    }

    /** Destinations by name, in key order. */
    public Map<String, Destination> destinations() {
        return destinations;
    }

    /** True if some destination goes to {@code broker}. */
    public boolean uses(Broker broker) {
        return destinations.values().stream().anyMatch(d -> d.broker() == broker);
    }

    public String httpHost() {
        return httpHost;
    }

    public int httpPort() {
        return httpPort;
    }

    public Duration healthTimeout() {
        return healthTimeout;
    }

    /** {@code TXBOX_*} environment variables that named no key and were ignored. */
    public List<String> ignoredEnv() {
        return ignoredEnv;
    }

    /** Every set key with its value as it may be shown (secrets masked), sorted. */
    public Map<String, String> describe() {
        return shown;
    }

    @Override
    public String toString() {
        return "RelayConfig" + shown;
    }
}
