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
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code dead list | retry | purge}: the outbox's dead letters. */
@Command(name = "dead", mixinStandardHelpOptions = true,
        description = "Lists, retries and purges dead outbox entries (rows the relay gave up on).",
        subcommands = {DeadCommand.ListDead.class, DeadCommand.RetryDead.class, DeadCommand.PurgeDead.class})
final class DeadCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: list, retry or purge");
    }

    /** {@code dead list}. */
    @Command(name = "list", mixinStandardHelpOptions = true,
            description = {"Lists dead outbox entries, newest first: id, step key, destination, attempts, when it"
                    + " died and why.", "Payloads are not shown unless --payload is given."})
    static final class ListDead extends AdminCommand {
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
            return TxboxCli.OK;
        }
    }

    /** {@code dead retry <id> | --all}. */
    @Command(name = "retry", mixinStandardHelpOptions = true,
            description = {"Moves dead entries back into the outbox, available at once with zero attempts.",
                "The relay publishes them again; the receiving inbox absorbs any duplicate."})
    static final class RetryDead extends AdminCommand {
        @ArgGroup(exclusive = true, multiplicity = "1")
        Which which;

        static final class Which {
            @Parameters(paramLabel = "ID", description = "The id of the dead entry (see dead list).")
            @Nullable Long id;

            @Option(names = "--all", required = true, description = "Every dead entry (of --destination, if given).")
            boolean all;
        }

        @Option(names = "--destination", paramLabel = "NAME", description = "With --all: only entries for this destination.")
        @Nullable String destination;

        @Override
        public Integer call() {
            if (which.id != null && destination != null) {
                throw new ParameterException(spec.commandLine(), "--destination goes with --all, not with an id");
            }
            DeadLetters.RetryResult r = withAdmin(ctx -> which.id != null ? ctx.dead().retry(which.id)
                    : ctx.dead().retryAll(destination));
            if (which.id != null && r.requeued() + r.alreadyPending() == 0) {
                throw new TxboxException("no dead outbox entry has id " + which.id);
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

    /** {@code dead purge --older-than D}. */
    @Command(name = "purge", mixinStandardHelpOptions = true,
            description = "Deletes dead entries that died more than --older-than ago (by the database clock).")
    static final class PurgeDead extends AdminCommand {
        @Option(names = "--older-than", required = true, paramLabel = "DURATION", converter = DurationConverter.class,
                description = "Like 7d, 12h, 30m or P7D.")
        Duration olderThan;

        @Option(names = "--dry-run", description = "Only count what would be deleted.")
        boolean dryRun;

        @Override
        public Integer call() {
            long n = withAdmin(ctx -> dryRun ? ctx.dead().countOlderThan(olderThan) : ctx.dead().purgeOlderThan(olderThan));
            if (json) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put(dryRun ? "wouldPurge" : "purged", n);
                m.put("olderThanSeconds", olderThan.getSeconds());
                printJson(m);
            } else {
                print((dryRun ? "would purge " : "purged ") + n + " dead entr" + (n == 1 ? "y" : "ies")
                        + " older than " + Durations.format(olderThan));
            }
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
