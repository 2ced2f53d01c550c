package io.txbox.relay.cli;

import io.txbox.TxboxException;
import io.txbox.relay.DeadLetters;
import java.nio.charset.StandardCharsets;
import io.txbox.relay.standalone.Durations;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

/** {@code dead list | retry | skip | purge}: the outbox's dead letters and the routing keys they park. */
@Command(name = "dead", mixinStandardHelpOptions = true,
        description = {"Lists, retries, skips and purges dead outbox entries (rows the relay gave up on).",
            "A dead entry parks its routing key: the key's later rows wait in the outbox, in order, until the entry"
                    + " is retried or skipped."},
        subcommands = {DeadCommand.ListDead.class, DeadCommand.RetryDead.class, DeadCommand.SkipDead.class,
            DeadCommand.PurgeDead.class})
final class DeadCommand extends CommandGroup {
    @Override
    String subcommands() {
        return "list, retry, skip or purge";
    }

    /** {@code dead list}. */
    @Command(name = "list", mixinStandardHelpOptions = true,
            description = {"Lists dead outbox entries, newest first: id, step key, destination, attempts, when it"
                    + " died and why; then the parked routing keys, longest parked first, with how long and how many"
                    + " rows wait behind each.", "Payloads are not shown unless --payload is given."})
    static final class ListDead extends AdminCommand {
        @Option(names = "--parked", description = "Only the parked routing keys.")
        boolean parked;

        @Option(names = "--limit", defaultValue = "100", description = "At most this many entries (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--destination", paramLabel = "NAME", description = "Only entries for this destination.")
        @Nullable String destination;

        @Option(names = "--payload", description = "Also show each payload (decoded as UTF-8).")
        boolean payload;

        @Override
        public Integer call() {
            if (limit < 1 || limit > 100_000) {
                throw new ParameterException(spec.commandLine(),
                        "--limit must be from 1 to 100000, but was " + limit);
            }
            if (parked) {
                return listParked();
            }
            List<DeadLetters.DeadLetter> rows = withAdmin(ctx -> ctx.dead().list(limit, destination, payload));
            if (json) {
                List<Map<String, Object>> out = new ArrayList<>();
                for (DeadLetters.DeadLetter r : rows) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("id", r.id());
                    m.put("stepKey", r.stepKey());
                    m.put("destination", r.destination());
                    m.put("attempts", r.attempts());
                    m.put("deadAt", r.deadAt().toString());
                    m.put("reason", r.reason());
                    if (payload) {
                        m.put("payload", text(r.payload()));
                    }
                    out.add(m);
                }
                printJson(out);
                return TxboxCli.OK;
            }
            if (rows.isEmpty()) {
                print("no dead outbox entries" + (destination == null ? "" : " for destination " + destination));
                return TxboxCli.OK;
            }
            List<String[]> table = new ArrayList<>();
            table.add(new String[] {"ID", "STEP KEY", "DESTINATION", "ATTEMPTS", "DEAD AT", "REASON"});
            for (DeadLetters.DeadLetter r : rows) {
                table.add(new String[] {String.valueOf(r.id()), r.stepKey(), r.destination(), String.valueOf(r.attempts()),
                    r.deadAt().truncatedTo(ChronoUnit.SECONDS).toString(), oneLine(r.reason(), 100)});
            }
            Tables.print(this, table);
            if (payload) {
                for (DeadLetters.DeadLetter r : rows) {
                    print("payload of " + r.id() + ": " + text(r.payload()));
                }
            }
            if (rows.size() == limit) {
                print("(first " + limit + " shown; use --limit for more)");
            }
            List<DeadLetters.ParkedKey> keys = parkedKeys();
            if (!keys.isEmpty()) {
                print("");
                printParked(keys);
            }
            return TxboxCli.OK;
        }

        private List<DeadLetters.ParkedKey> parkedKeys() {
            List<DeadLetters.ParkedKey> keys = withAdmin(ctx -> ctx.dead().parkedKeys(limit));
            return destination == null ? keys : keys.stream().filter(k -> k.destination().equals(destination)).toList();
        }

        private Integer listParked() {
            List<DeadLetters.ParkedKey> keys = parkedKeys();
            if (json) {
                List<Map<String, Object>> out = new ArrayList<>();
                for (DeadLetters.ParkedKey k : keys) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("destination", k.destination());
                    m.put("routingKey", k.routingKey());
                    m.put("deadId", k.deadId());
                    m.put("parkedAt", k.parkedAt().toString());
                    m.put("ageSeconds", k.age().toSeconds());
                    m.put("waiting", k.waiting());
                    out.add(m);
                }
                printJson(out);
            } else if (keys.isEmpty()) {
                print("no parked routing keys" + (destination == null ? "" : " for destination " + destination));
            } else {
                printParked(keys);
            }
            return TxboxCli.OK;
        }

        private void printParked(List<DeadLetters.ParkedKey> keys) {
            List<String[]> table = new ArrayList<>();
            table.add(new String[] {"PARKED KEY", "DESTINATION", "DEAD ID", "PARKED FOR", "ROWS WAITING"});
            for (DeadLetters.ParkedKey k : keys) {
                table.add(new String[] {oneLine(k.routingKey(), 60), k.destination(), String.valueOf(k.deadId()),
                    Durations.format(k.age().truncatedTo(k.age().toMinutes() > 0 ? ChronoUnit.MINUTES : ChronoUnit.SECONDS)),
                    String.valueOf(k.waiting())});
            }
            Tables.print(this, table);
            print("(dead retry --key K --destination D resumes a key in order; dead skip --key K --destination D drops"
                    + " its dead entry and releases it)");
        }
    }

    /** {@code dead retry <id> | --key K --destination D | --all}. */
    @Command(name = "retry", mixinStandardHelpOptions = true,
            description = {"Moves dead entries back into the outbox, available at once with zero attempts, at their"
                    + " old place in id order: a parked key resumes in order, its dead entry first.",
                "The relay publishes them again; the receiving inbox absorbs any duplicate."})
    static final class RetryDead extends AdminCommand {
        @ArgGroup(exclusive = true, multiplicity = "1")
        Which which;

        static final class Which {
            @Parameters(paramLabel = "ID", description = "The id of the dead entry (see dead list).")
            @Nullable Long id;

            @Option(names = "--key", paramLabel = "ROUTING_KEY", required = true,
                    description = "The dead entry a parked routing key waits on (with --destination).")
            @Nullable String key;

            @Option(names = "--all", required = true, description = "Every dead entry (of --destination, if given).")
            boolean all;
        }

        @Option(names = "--destination", paramLabel = "NAME",
                description = "With --all: only entries for this destination; with --key: the key's destination.")
        @Nullable String destination;

        @Override
        public Integer call() {
            if (which.id != null && destination != null) {
                throw new ParameterException(spec.commandLine(), "--destination goes with --all or --key, not with an id");
            }
            if (which.key != null && destination == null) {
                throw new ParameterException(spec.commandLine(), "--key needs --destination: a key parks in one destination");
            }
            DeadLetters.RetryResult r = withAdmin(ctx -> which.id != null ? ctx.dead().retry(which.id)
                    : which.key != null ? ctx.dead().retryKey(destination, which.key) : ctx.dead().retryAll(destination));
            if (which.id != null && r.requeued() + r.alreadyPending() == 0) {
                throw new TxboxException("no dead outbox entry has id " + which.id);
            }
            if (which.key != null && r.requeued() + r.alreadyPending() == 0) {
                throw new TxboxException("routing key " + which.key + " is not parked in destination " + destination
                        + " (see dead list --parked)");
            }
            if (json) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("requeued", r.requeued());
                m.put("alreadyPending", r.alreadyPending());
                printJson(m);
            } else {
                print("requeued " + r.requeued() + " dead entr" + (r.requeued() == 1 ? "y" : "ies")
                        + (which.id != null ? " (id " + which.id + ")" : "")
                        + (r.alreadyPending() == 0 ? "" : "; " + r.alreadyPending()
                                + " had their step key pending in the outbox again and were only removed"));
            }
            return TxboxCli.OK;
        }
    }

    /** {@code dead skip --key K --destination D}. */
    @Command(name = "skip", mixinStandardHelpOptions = true,
            description = {"Deletes the dead entry a parked routing key waits on, for good, and releases the key:"
                    + " its waiting rows are published, in order, without it."})
    static final class SkipDead extends AdminCommand {
        @Option(names = "--key", paramLabel = "ROUTING_KEY", required = true, description = "The parked routing key.")
        String key;

        @Option(names = "--destination", paramLabel = "NAME", required = true, description = "The key's destination.")
        String destination;

        @Override
        public Integer call() {
            boolean skipped = withAdmin(ctx -> ctx.dead().skipKey(destination, key));
            if (!skipped) {
                throw new TxboxException("routing key " + key + " is not parked in destination " + destination
                        + " (see dead list --parked)");
            }
            if (json) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("skipped", true);
                m.put("destination", destination);
                m.put("routingKey", key);
                printJson(m);
            } else {
                print("skipped the dead entry of routing key " + key + " in " + destination + "; the key is released");
            }
            return TxboxCli.OK;
        }
    }

    /** {@code dead purge --older-than D}. */
    @Command(name = "purge", mixinStandardHelpOptions = true,
            description = {"Deletes dead entries that died more than --older-than ago (by the database clock).",
                "A purged entry releases the routing key it parked, as dead skip does."})
    static final class PurgeDead extends AdminCommand {
        @Option(names = "--older-than", required = true, paramLabel = "DURATION", converter = DurationConverter.class,
                description = "Like 7d, 12h, 30m or P7D.")
        Duration olderThan;

        @Option(names = "--dry-run", description = "Only count what would be deleted.")
        boolean dryRun;

        @Override
        public Integer call() {
            long n = withAdmin(ctx -> dryRun ? ctx.dead().countOlderThan(olderThan) : ctx.dead().purgeOlderThan(olderThan));
            printPurge(n, dryRun, "dead", olderThan, "");
            return TxboxCli.OK;
        }
    }

    /** Payloads are shown as UTF-8, lossy: an operator's view, not a copy. */
    static @Nullable String text(byte @Nullable [] payload) {
        return payload == null ? null : new String(payload, StandardCharsets.UTF_8);
    }

    static String oneLine(String s, int max) {
        String t = s.replaceAll("\\s+", " ").trim();
        return t.length() <= max ? t : t.substring(0, max - 3) + "...";
    }
}
