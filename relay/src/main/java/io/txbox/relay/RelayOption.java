package io.txbox.relay;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.internal.Args;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * One tunable option of the relay, and the table of all of them ({@link #all()}): the one place
 * that knows each option's name, key, type, default and allowed values. {@link Relay.Builder}
 * checks its setters through it, and the standalone relay and the Spring starter bind the keys
 * {@code txbox.relay.<key>} by walking the table, so an option is written once and reaches the
 * same builder setting from every face.
 *
 * @param <T> {@code Integer}, {@code Duration}, {@code Boolean} or {@code String}
 */
public final class RelayOption<T> {
    /** Worker threads, each with its own lanes and connection; default {@value Relay#DEFAULT_WORKERS}, 1 to 64. */
    public static final RelayOption<Integer> WORKERS = range("workers", "workers", Integer.class, Relay.DEFAULT_WORKERS,
            1, 64, "worker threads, each with its own lanes and connection");
    /** Rows claimed per batch; default {@value Relay#DEFAULT_BATCH_SIZE}, 1 to {@value Relay#MAX_BATCH_SIZE}. */
    public static final RelayOption<Integer> BATCH_SIZE = range("batchSize", "batch-size", Integer.class,
            Relay.DEFAULT_BATCH_SIZE, 1, Relay.MAX_BATCH_SIZE, "rows claimed per batch");
    /** How long an idle worker waits before looking again; default 200 ms, 1 ms to 1 h. */
    public static final RelayOption<Duration> POLL_INTERVAL = range("pollInterval", "poll-interval", Duration.class,
            Relay.DEFAULT_POLL_INTERVAL, Duration.ofMillis(1), Duration.ofHours(1), "how long an idle worker waits before looking again");
    /** Longest wait for the broker to confirm a batch; default 10 s, 100 ms to 10 min, and less than the lane lease. */
    public static final RelayOption<Duration> PUBLISH_TIMEOUT = range("publishTimeout", "publish-timeout", Duration.class,
            Relay.DEFAULT_PUBLISH_TIMEOUT, Duration.ofMillis(100), Duration.ofMinutes(10),
            "longest wait for the broker to confirm a batch; less than the lane lease");
    /** How long a worker's lanes stay its own without renewal; default 30 s, 1 s to 1 h. */
    public static final RelayOption<Duration> LANE_LEASE = range("laneLease", "lane-lease", Duration.class,
            Relay.DEFAULT_LANE_LEASE, Duration.ofSeconds(1), Duration.ofHours(1), "how long a worker's lanes stay its own without renewal");
    /** Publish attempts before a row is dead-lettered; default {@value Relay#DEFAULT_MAX_ATTEMPTS}, at least 1. */
    public static final RelayOption<Integer> MAX_ATTEMPTS = range("maxAttempts", "max-attempts", Integer.class,
            Relay.DEFAULT_MAX_ATTEMPTS, 1, Integer.MAX_VALUE, "publish attempts before a row is dead-lettered");
    /** Retry delay after the first failure; default 500 ms, 1 ms to 1 day, at most the maximum backoff. */
    public static final RelayOption<Duration> INITIAL_BACKOFF = range("initialBackoff", "initial-backoff", Duration.class,
            Relay.DEFAULT_INITIAL_BACKOFF, Duration.ofMillis(1), Duration.ofDays(1),
            "retry delay after the first failure, doubled per attempt, with jitter of up to half");
    /** Longest retry delay; default 5 min, 1 ms to 1 day. */
    public static final RelayOption<Duration> MAX_BACKOFF = range("maxBackoff", "max-backoff", Duration.class,
            Relay.DEFAULT_MAX_BACKOFF, Duration.ofMillis(1), Duration.ofDays(1), "longest retry delay");
    /** How often the backlog is sampled; default 15 s; zero turns it off, otherwise 100 ms to 1 day. */
    public static final RelayOption<Duration> BACKLOG_INTERVAL = new RelayOption<>("backlogInterval", "backlog-interval",
            Duration.class, Relay.DEFAULT_BACKLOG_INTERVAL,
            d -> d.isZero() || d.compareTo(Duration.ofMillis(100)) >= 0 && d.compareTo(Duration.ofDays(1)) <= 0,
            "must be zero (off) or between " + Duration.ofMillis(100) + " and " + Duration.ofDays(1),
            "how often the backlog is sampled; zero turns it off");
    /** Bound on {@link Relay#close()}; default 20 s, 0 to 1 h. */
    public static final RelayOption<Duration> SHUTDOWN_TIMEOUT = range("shutdownTimeout", "shutdown-timeout", Duration.class,
            Relay.DEFAULT_SHUTDOWN_TIMEOUT, Duration.ZERO, Duration.ofHours(1), "bound on closing the relay");
    /** Id of this relay in logs and lane ownership; default {@code relay-<pid>-<random>}, 1-200 characters of {@code [A-Za-z0-9._:-]}. */
    public static final RelayOption<String> RELAY_ID = new RelayOption<>("relayId", "id", String.class, null,
            s -> s.matches("[A-Za-z0-9._:-]{1,200}"), "must be 1-200 characters of [A-Za-z0-9._:-]",
            "id in logs and lane ownership, unique among running relays");

    /**
     * Destinations whose dead-lettered rows do not park their routing key: the key's later rows
     * are published at once, out of order with the dead one. Comma-separated destination names,
     * or {@code *} for every destination; default empty: a dead-lettered row parks its key in
     * every destination until an operator retries or skips it ({@link DeadLetters}).
     */
    public static final RelayOption<String> MOVE_ON_DESTINATIONS = new RelayOption<>("moveOnDestinations",
            "move-on-destinations", String.class, "", s -> s.length() <= 10_000,
            "must be comma-separated destination names or *, at most 10000 characters",
            "destinations whose dead-lettered rows do not park their routing key (comma-separated, * for all)");

    /**
     * Whether the relay listens for the outbox's wake-ups on PostgreSQL (LISTEN on one connection
     * of its own), so a send that commits wakes it at once instead of at its next poll; default
     * {@value Relay#DEFAULT_LISTEN}. On MariaDB and MySQL it does nothing.
     */
    public static final RelayOption<Boolean> LISTEN = new RelayOption<>("listen", "listen", Boolean.class,
            Relay.DEFAULT_LISTEN, b -> true, "must be true or false",
            "on PostgreSQL, listen for the outbox's wake-ups on one connection of its own");

    private static final List<RelayOption<?>> ALL = List.of(RELAY_ID, WORKERS, BATCH_SIZE, POLL_INTERVAL, LISTEN,
            PUBLISH_TIMEOUT, LANE_LEASE, MAX_ATTEMPTS, INITIAL_BACKOFF, MAX_BACKOFF, BACKLOG_INTERVAL, SHUTDOWN_TIMEOUT,
            MOVE_ON_DESTINATIONS);

    private final String name;
    private final String key;
    private final Class<T> type;
    private final @Nullable T defaultValue;
    private final Predicate<T> allowed;
    private final String rule;
    private final String meaning;

    private RelayOption(String name, String key, Class<T> type, @Nullable T defaultValue, Predicate<T> allowed,
            String rule, String meaning) {
        this.name = name;
        this.key = key;
        this.type = type;
        this.defaultValue = defaultValue;
        this.allowed = allowed;
        this.rule = rule;
        this.meaning = meaning;
    }

    private static <T extends Comparable<? super T>> RelayOption<T> range(String name, String key, Class<T> type,
            T defaultValue, T min, T max, String meaning) {
        String rule = max instanceof Integer && max.equals(Integer.MAX_VALUE) ? "must be at least " + min
                : "must be between " + min + " and " + max;
        return new RelayOption<>(name, key, type, defaultValue, v -> v.compareTo(min) >= 0 && v.compareTo(max) <= 0,
                rule, meaning);
    }

    /** Every option, in the order the documentation lists them. */
    public static List<RelayOption<?>> all() {
        return ALL;
    }

    /** The builder's name for it, as error messages spell it: {@code laneLease}. */
    public String name() {
        return name;
    }

    /** Its key after {@code txbox.relay.} in the standalone relay's file and Spring's properties: {@code lane-lease}. */
    public String key() {
        return key;
    }

    /** {@code Integer.class}, {@code Duration.class}, {@code Boolean.class} or {@code String.class}. */
    public Class<T> type() {
        return type;
    }

    /** The default, or null where it is made when the relay is built (the relay id). */
    public @Nullable T defaultValue() {
        return defaultValue;
    }

    /** The rule on its values, as error messages state it: {@code must be between PT1S and PT1H}. */
    public String rule() {
        return rule;
    }

    /** What it controls, in a few words. */
    public String meaning() {
        return meaning;
    }

    /**
     * Returns {@code value} if this option allows it.
     *
     * @throws ConfigException naming the option, its rule and the value
     */
    public T check(@Nullable T value) {
        if (value == null || !allowed.test(value)) {
            throw new ConfigException(name + " " + rule + ", but was "
                    + (value == null ? "null" : value instanceof String s ? Texts.quote(s) : value));
        }
        return value;
    }

    /** Sets this option on {@code builder}, checked as the builder's own setter checks it. */
    public Relay.Builder set(Relay.Builder builder, @Nullable T value) {
        return Args.notNull(builder, "builder").set(this, check(value));
    }

    /** The value {@code builder} holds for this option (its default if never set). */
    public @Nullable T get(Relay.Builder builder) {
        return type.cast(Args.notNull(builder, "builder").value(this));
    }

    @Override
    public String toString() {
        return name;
    }
}
