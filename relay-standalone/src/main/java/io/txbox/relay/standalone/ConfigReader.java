package io.txbox.relay.standalone;

import static io.txbox.relay.standalone.RelayConfig.*;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.TxboxTables;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayOption;
import io.txbox.relay.internal.TargetNames;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.relay.standalone.ConfigSource.Raw;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import io.txbox.relay.standalone.RelayConfig.Broker;
import io.txbox.relay.standalone.RelayConfig.Destination;

/** Reads and checks the raw values, collecting every error instead of stopping at the first. */
final class ConfigReader {
    private final Map<String, Raw> raw;
    private final Set<String> used = new LinkedHashSet<>();
    final List<String> errors = new ArrayList<>();
    final Map<String, String> shown = new TreeMap<>();

    String jdbcUrl = "";
    @Nullable String jdbcUser;
    @Nullable String jdbcPassword;
    int poolSize;
    Duration connectionTimeout = DEFAULT_CONNECTION_TIMEOUT;
    TxboxTables tables = TxboxTables.defaults();
    /** The relay's options as read, each checked by the builder as it is set; never built. */
    final Relay.Builder relay = Relay.builder();
    final Map<String, String> kafka = new TreeMap<>();
    @Nullable String kafkaStrictFencing;
    @Nullable String rabbitUri;
    final Map<String, Destination> destinations = new TreeMap<>();
    String httpHost = DEFAULT_HTTP_HOST;
    int httpPort = DEFAULT_HTTP_PORT;
    Duration healthTimeout = DEFAULT_HEALTH_TIMEOUT;

    ConfigReader(Map<String, Raw> raw) {
        this.raw = raw;
        raw.forEach((k, v) -> shown.put(k, Redaction.value(k, v.value())));
    }

    void read() {
        for (Raw r : raw.values()) {
            if (!r.origin().startsWith("env ") && TRAILING_COMMENT.matcher(r.value()).find()) {
                error(r, "ends in what reads as a comment, but a properties file has no end-of-line comments"
                        + " (# starts a comment only at the start of a line): put the comment on a line of its own");
            }
        }
        Raw url = raw.get(JDBC_URL);
        if (url == null || url.value().isEmpty()) {
            errors.add(JDBC_URL + " is required (the JDBC URL of the database holding the outbox), "
                    + (url == null ? "but is not set" : "but is empty (" + url.origin() + ")"));
        } else if (!url.value().startsWith("jdbc:")) {
            error(url, "must be a JDBC URL starting with jdbc:");
        } else if (!driverAccepts(url.value())) {
            error(url, "no JDBC driver accepts this URL: write it as jdbc:postgresql://host:5432/db,"
                    + " jdbc:mariadb://host:3306/db or jdbc:mysql://host:3306/db");
        } else {
            jdbcUrl = url.value();
            Redaction.register(passwordParam(jdbcUrl));
        }
        used.add(JDBC_URL);
        jdbcUser = string(JDBC_USER);
        jdbcPassword = string(JDBC_PASSWORD);
        Redaction.register(jdbcPassword);

        String schema = orDefault(string(SCHEMA), TxboxTables.DEFAULT_SCHEMA);
        String prefix = orDefault(stringAllowEmpty(TABLE_PREFIX), TxboxTables.DEFAULT_PREFIX);
        try {
            tables = new TxboxTables(schema, prefix);
        } catch (ConfigException e) {
            Raw bad = raw.containsKey(SCHEMA) && e.getMessage().startsWith("schema") ? raw.get(SCHEMA) : raw.get(TABLE_PREFIX);
            if (bad != null) {
                error(bad, e.getMessage().replaceFirst(", but was .*", ""));
            } else {
                errors.add(e.getMessage());
            }
        }

        readRelay();
        // one connection per worker, one for health checks, one spare for a slow return, one to listen
        int workers = RelayOption.WORKERS.get(relay);
        boolean listen = Boolean.TRUE.equals(RelayOption.LISTEN.get(relay));
        int least = workers + 1 + (listen ? 1 : 0);
        poolSize = integer(JDBC_POOL_SIZE, least + 1, 1, MAX_POOL_SIZE);
        if (raw.containsKey(JDBC_POOL_SIZE) && poolSize < least) {
            error(raw.get(JDBC_POOL_SIZE), "must be at least " + relayKey(RelayOption.WORKERS) + " + " + (least - workers)
                    + " (" + least + "): each worker keeps a connection, health checks need one more"
                    + (listen ? ", and " + relayKey(RelayOption.LISTEN) + " keeps one" : ""));
        }
        connectionTimeout = duration(JDBC_CONNECTION_TIMEOUT, connectionTimeout, Duration.ofMillis(250), Duration.ofMinutes(10));

        readDestinations();
        readKafka();
        readRabbit();

        httpHost = orDefault(string(HTTP_HOST), DEFAULT_HTTP_HOST);
        httpPort = integer(HTTP_PORT, httpPort, 0, 65535);
        healthTimeout = duration(HEALTH_TIMEOUT, healthTimeout, Duration.ofMillis(10), Duration.ofMinutes(1));

        for (Raw r : raw.values()) {
            if (!used.contains(r.key())) {
                errors.add(r.key() + " (" + r.origin() + ") is not a known key" + hint(r.key()));
            }
        }
    }

    /**
     * The {@code txbox.relay.*} keys, one per {@link RelayOption}: each value is parsed by its
     * option's type and set through the table, which checks it as the builder does; the rules
     * across options (publish timeout under the lane lease, backoff order) through {@link
     * Relay.Builder#build()}, on placeholders that are never used. Their messages are shown with
     * the key, value and origin.
     */
    private void readRelay() {
        RelayOption.all().forEach(this::readOption);
        try {
            Relay.Builder check = Relay.builder();
            RelayOption.all().forEach(o -> copy(o, check));
            check.closePublishers(false).dataSource(Placeholders.dataSource()).route("placeholder", Placeholders.route())
                    .build();
        } catch (ConfigException e) {
            errors.add(withKeys(e.getMessage()));
        }
    }

    private <T> void copy(RelayOption<T> option, Relay.Builder to) {
        T value = option.get(relay);
        if (value != null) {
            option.set(to, value);
        }
    }

    private <T> void readOption(RelayOption<T> option) {
        String key = relayKey(option);
        used.add(key);
        Raw r = raw.get(key);
        if (r == null || r.value().isEmpty() && option.type() == String.class) {
            return;
        }
        String text = r.value().trim();
        Object value;
        if (option.type() == Integer.class) {
            try {
                value = Integer.parseInt(text);
            } catch (NumberFormatException e) {
                error(r, "must be a whole number " + withKeys(option.rule()).substring("must be ".length()));
                return;
            }
        } else if (option.type() == Duration.class) {
            value = Durations.parse(text);
            if (value == null) {
                error(r, "must be a duration " + withKeys(option.rule()).substring("must be ".length())
                        + " (like 250ms, 30s, 5m, 12h, 7d or ISO-8601 PT0.25S)");
                return;
            }
        } else if (option.type() == Boolean.class) {
            if (!text.equals("true") && !text.equals("false")) {
                error(r, withKeys(option.rule()));
                return;
            }
            value = Boolean.valueOf(text);
        } else {
            value = r.value();
        }
        T typed = option.type().cast(value);
        apply(r, () -> option.set(relay, typed));
    }

    /** Runs a builder setter for {@code r}'s value; its ConfigException becomes an error naming the key. */
    private void apply(@Nullable Raw r, Runnable setter) {
        try {
            setter.run();
        } catch (ConfigException e) {
            error(r, rule(e.getMessage()));
        }
    }

    private void readDestinations() {
        for (Raw r : raw.values()) {
            if (!r.key().startsWith(DESTINATION_PREFIX)) {
                continue;
            }
            used.add(r.key());
            String name = r.key().substring(DESTINATION_PREFIX.length());
            if (name.isEmpty() || name.length() > 255) {
                error(r, "needs a destination name of 1 to 255 characters after " + DESTINATION_PREFIX);
                continue;
            }
            String v = r.value();
            int colon = v.indexOf(':');
            String kind = colon < 0 ? "" : v.substring(0, colon).toLowerCase(Locale.ROOT);
            String target = colon < 0 ? "" : v.substring(colon + 1).trim();
            if (kind.equals(Broker.KAFKA.id())) {
                try {
                    destinations.put(name, new Destination(name, Broker.KAFKA, TargetNames.kafkaTopic(target)));
                } catch (ConfigException e) {
                    error(r, "after kafka: " + withoutValue(e.getMessage()));
                }
            } else if (kind.equals(Broker.RABBITMQ.id())) {
                try {
                    destinations.put(name, new Destination(name, Broker.RABBITMQ, TargetNames.rabbitExchange(target)));
                } catch (ConfigException e) {
                    error(r, "after rabbitmq: " + withoutValue(e.getMessage()));
                }
            } else {
                error(r, "must be kafka:<topic> or rabbitmq:<exchange>");
            }
        }
    }

    /**
     * The {@code txbox.kafka.*} keys. Producer properties and the strict-fencing prefix go
     * through {@link KafkaPublisher.Builder}, which owns the rules on them (the properties the
     * relay's guarantees rest on, the prefix pattern); no producer is created here.
     */
    private void readKafka() {
        KafkaPublisher.Builder builder = KafkaPublisher.builder();
        Set<String> producerNames = KafkaNames.producerConfigNames();
        for (Raw r : raw.values()) {
            if (!r.key().startsWith(KAFKA_PREFIX) || r.key().equals(KAFKA_BOOTSTRAP) || r.key().equals(KAFKA_STRICT_FENCING)) {
                continue;
            }
            used.add(r.key());
            String name = r.key().substring(KAFKA_PREFIX.length());
            if (Redaction.isSecretKey(name)) {
                Redaction.register(r.value());
            }
            if (name.equals("bootstrap.servers")) {
                error(r, "is spelled " + KAFKA_BOOTSTRAP + " here");
            } else if (!producerNames.isEmpty() && !producerNames.contains(name)) {
                error(r, "is not a Kafka producer property" + KafkaNames.suggest(name));
            } else {
                int before = errors.size();
                apply(r, () -> builder.property(name, r.value()));
                if (errors.size() == before) {
                    kafka.put(name, r.value());
                }
            }
        }
        kafkaStrictFencing = string(KAFKA_STRICT_FENCING);
        if (kafkaStrictFencing != null) {
            String prefix = kafkaStrictFencing;
            apply(raw.get(KAFKA_STRICT_FENCING), () -> builder.strictFencing(prefix));
        }
        String bootstrap = string(KAFKA_BOOTSTRAP);
        if (bootstrap != null) {
            kafka.put("bootstrap.servers", bootstrap);
        }
        boolean needed = destinations.values().stream().anyMatch(d -> d.broker() == Broker.KAFKA);
        if (needed && bootstrap == null) {
            errors.add(KAFKA_BOOTSTRAP + " is required because destination "
                    + Texts.quote(first(Broker.KAFKA)) + " goes to Kafka, but is not set");
        }
    }

    private void readRabbit() {
        rabbitUri = string(RABBITMQ_URI);
        if (rabbitUri != null) {
            Redaction.register(userInfoPassword(rabbitUri));
            try {
                // the publisher's own rule, so the config accepts exactly the URIs the publisher does
                RabbitPublisher.builder().uri(rabbitUri);
            } catch (ConfigException e) {
                errors.add(RABBITMQ_URI + " (" + raw.get(RABBITMQ_URI).origin() + "): " + e.getMessage());
            }
        }
        boolean needed = destinations.values().stream().anyMatch(d -> d.broker() == Broker.RABBITMQ);
        if (needed && rabbitUri == null) {
            errors.add(RABBITMQ_URI + " is required because destination "
                    + Texts.quote(first(Broker.RABBITMQ)) + " goes to RabbitMQ, but is not set");
        }
    }

    private String first(Broker broker) {
        return destinations.values().stream().filter(d -> d.broker() == broker).findFirst().map(Destination::name).orElse("");
    }

    private @Nullable String string(String key) {
        used.add(key);
        Raw r = raw.get(key);
        return r == null || r.value().isEmpty() ? null : r.value();
    }

    private @Nullable String stringAllowEmpty(String key) {
        used.add(key);
        Raw r = raw.get(key);
        return r == null ? null : r.value();
    }

    private int integer(String key, int defaultValue, int min, int max) {
        return parse(key, defaultValue, s -> {
            int v = Integer.parseInt(s);
            return v < min || v > max ? null : v;
        }, "must be a whole number between " + min + " and " + max);
    }

    private Duration duration(String key, Duration defaultValue, Duration min, Duration max) {
        return parse(key, defaultValue, s -> {
            Duration d = Durations.parse(s);
            return d == null || d.compareTo(min) < 0 || d.compareTo(max) > 0 ? null : d;
        }, "must be a duration between " + Durations.format(min) + " and " + Durations.format(max)
                + " (like 250ms, 30s, 5m, 12h, 7d or ISO-8601 PT0.25S)");
    }

    private <T> T parse(String key, T defaultValue, Function<String, @Nullable T> parser, String rule) {
        used.add(key);
        Raw r = raw.get(key);
        if (r == null) {
            return defaultValue;
        }
        T v = null;
        try {
            v = parser.apply(r.value());
        } catch (NumberFormatException e) {
            // reported below
        }
        if (v == null) {
            error(r, rule);
            return defaultValue;
        }
        return v;
    }

    private void error(@Nullable Raw r, String rule) {
        if (r == null) {
            errors.add(rule);
            return;
        }
        errors.add(r.key() + " = " + Texts.quote(Redaction.value(r.key(), r.value())) + " (" + r.origin() + "): " + rule);
    }

    /**
     * A builder's message about one option as the rule shown after a key: from its
     * {@code must ...} on, without the {@code but was} part (the key's value is shown already),
     * durations written as in the config.
     */
    private static String rule(String message) {
        String m = withoutValue(message);
        int must = m.indexOf("must ");
        if (must > 0) {
            m = m.substring(must);
        } else if (m.startsWith("Kafka property ")) {
            m = m.substring(m.indexOf(' ', "Kafka property ".length()) + 1);
        }
        return withKeys(m);
    }

    private static String withoutValue(String message) {
        int butWas = message.lastIndexOf(", but was ");
        return butWas < 0 ? message : message.substring(0, butWas);
    }

    private static String orDefault(@Nullable String v, String d) {
        return v == null ? d : v;
    }

    /** Whitespace then {@code #} inside a value: an end-of-line comment that a properties file keeps as value. */
    private static final Pattern TRAILING_COMMENT = Pattern.compile("\\s#");

    /** Whether a JDBC driver on the class path takes {@code url} (the drivers only parse it; nothing connects). */
    private static boolean driverAccepts(String url) {
        try {
            DriverManager.getDriver(Pools.driverUrl(url));
            return true;
        } catch (SQLException e) {
            return false;
        }
    }

    /**
     * The nearest known key to an unknown one, always: the fixed keys, and a destination key
     * with the unknown key's last part as its name ({@code txbox.destinations.shipping} reads
     * as {@code txbox.destination.shipping}).
     */
    static String hint(String key) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        List<String> candidates = new ArrayList<>(FIXED_KEYS);
        for (int dot = key.indexOf('.'); dot >= 0 && dot < key.length() - 1; dot = key.indexOf('.', dot + 1)) {
            candidates.add(DESTINATION_PREFIX + key.substring(dot + 1));
        }
        for (String k : candidates) {
            int d = distance(key, k);
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        String hint = best == null ? "" : "; did you mean " + best + "?";
        return key.startsWith(ConfigSource.KEY_PREFIX) ? hint : hint + " (every key starts with " + ConfigSource.KEY_PREFIX + ")";
    }

    /**
     * The builders' option names as their messages spell them, and the keys they come from here:
     * a builder's message about an option is shown with the option's key.
     */
    private static final Map<String, String> BUILDER_NAMES = builderNames();

    private static Map<String, String> builderNames() {
        Map<String, String> names = new java.util.HashMap<>();
        RelayOption.all().forEach(o -> names.put(o.name(), relayKey(o)));
        names.put("strictFencing(prefix)", KAFKA_STRICT_FENCING);
        return Map.copyOf(names);
    }

    private static final Pattern BUILDER_NAME = Pattern.compile(
            "\\b(" + String.join("|", BUILDER_NAMES.keySet()).replace("(", "\\(").replace(")", "\\)") + ")(?![\\w(])");
    private static final Pattern ISO_DURATION = Pattern.compile("\\bPT[-0-9.HMS]+\\b");

    /** A builder's message with its option names replaced by their keys and durations written as in the config. */
    static String withKeys(String message) {
        String named = BUILDER_NAME.matcher(message).replaceAll(m -> Matcher.quoteReplacement(BUILDER_NAMES.get(m.group(1))));
        return ISO_DURATION.matcher(named).replaceAll(m -> {
            try {
                return Matcher.quoteReplacement(Durations.format(Duration.parse(m.group())));
            } catch (RuntimeException e) {
                return Matcher.quoteReplacement(m.group());
            }
        });
    }

    /** Levenshtein distance, for "did you mean" hints on typos. */
    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    private static @Nullable String passwordParam(String jdbcUrl) {
        Matcher m = Pattern.compile("(?i)[?&;]password=([^&;]*)").matcher(jdbcUrl);
        return m.find() ? m.group(1) : userInfoPassword(jdbcUrl);
    }

    private static @Nullable String userInfoPassword(String uri) {
        Matcher m = Pattern.compile("://[^:/@\\s]*:([^@\\s/]*)@").matcher(uri);
        return m.find() ? m.group(1) : null;
    }
}
