package io.txbox.relay.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.ConfigException;
import io.txbox.TxboxException;
import io.txbox.inbox.InboxMaintenance;
import io.txbox.relay.DeadLetters;
import io.txbox.relay.RelayAdmin;
import io.txbox.relay.standalone.Pools;
import io.txbox.relay.standalone.Durations;
import io.txbox.relay.standalone.Redaction;
import io.txbox.relay.standalone.RelayConfig;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Base of the commands that work on the txbox tables: config, a small pool, text or JSON output. */
abstract class AdminCommand implements Callable<Integer> {
    @Mixin
    ConfigOptions configOptions;

    @Option(names = "--json", description = "Print the result as one JSON document, for scripts.")
    boolean json;

    @Option(names = "--connect-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
            defaultValue = "3s", description = "Give up when the database cannot be reached within this time (default:"
                    + " ${DEFAULT-VALUE}; txbox.jdbc.connection-timeout is for the relay process).")
    Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;

    /** How long an admin command waits for the database by default: 3 s. */
    static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(3);
    /** The connection pool's floor. */
    private static final Duration MIN_CONNECT_TIMEOUT = Duration.ofMillis(250);

    @Spec
    CommandSpec spec;

    /**
     * Loads the config, opens a two-connection pool, checks that the txbox tables exist (unless
     * {@link #needsTables()} is false), runs {@code work}, closes the pool.
     */
    final <T> T withAdmin(Function<Context, T> work) {
        if (connectTimeout.compareTo(MIN_CONNECT_TIMEOUT) < 0) {
            throw new ConfigException("--connect-timeout must be at least 250ms, but was " + connectTimeout.toMillis() + "ms");
        }
        RelayConfig config = configOptions.loadForAdmin(root().env);
        try (HikariDataSource pool = Pools.open(config, "txbox-admin", 2, connectTimeout, null)) {
            RelayAdmin relay = RelayAdmin.of(pool, config.tables());
            if (needsTables()) {
                relay.requireTables();
            }
            return work.apply(new Context(config, pool, relay, relay.deadLetters(),
                    InboxMaintenance.of(pool, config.tables())));
        }
    }

    /** Whether the command works on existing txbox tables; {@code migrate} creates them. */
    boolean needsTables() {
        return true;
    }

    /** What a command needs while its pool is open. */
    record Context(RelayConfig config, HikariDataSource dataSource, RelayAdmin relay, DeadLetters dead,
            InboxMaintenance inbox) {}

    final TxboxCli root() {
        return (TxboxCli) spec.root().userObject();
    }

    final PrintWriter out() {
        return spec.commandLine().getOut();
    }

    /** Prints {@code value} as JSON, secrets masked. */
    final void printJson(Object value) {
        try {
            out().println(Redaction.scrub(Json.MAPPER.writeValueAsString(value)));
        } catch (JsonProcessingException e) {
            throw new TxboxException("cannot render JSON: " + e.getMessage(), e);
        }
    }

    /**
     * Prints what a purge deleted, or with {@code dryRun} would delete: {@code n} {@code kind}
     * entries older than {@code olderThan}, then {@code scope} (empty, or the text naming a filter).
     */
    final void printPurge(long n, boolean dryRun, String kind, Duration olderThan, String scope) {
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put(dryRun ? "wouldPurge" : "purged", n);
            m.put("olderThanSeconds", olderThan.getSeconds());
            printJson(m);
        } else {
            print((dryRun ? "would purge " : "purged ") + n + " " + kind + " entr" + (n == 1 ? "y" : "ies")
                    + " older than " + Durations.format(olderThan) + scope);
        }
    }

    /** Prints a line of text, secrets masked. */
    final void print(String line) {
        out().println(Redaction.scrub(line));
    }

    /** Jackson is loaded only by a command that prints JSON: picocli builds every command at start, run too. */
    private static final class Json {
        static final ObjectMapper MAPPER = new ObjectMapper();
    }
}
