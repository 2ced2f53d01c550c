package io.txbox.relay.cli;

import io.txbox.TxboxException;
import io.txbox.inbox.ParkedKey;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** {@code inbox parked list | retry | skip}: ordering keys that consumers parked behind a dead message. */
@Command(name = "parked", mixinStandardHelpOptions = true,
        description = {"Lists and resolves ordering keys that consumers built with parkKeys(true) parked behind a"
                + " DEAD message.",
            "retry and skip ask the running consumer, which carries them out through its handler within its"
                + " parkedPollInterval (default 5s)."},
        subcommands = {ParkedCommand.ListParked.class, ParkedCommand.Retry.class, ParkedCommand.Skip.class})
final class ParkedCommand extends CommandGroup {
    @Override
    String subcommands() {
        return "list, retry or skip";
    }

    /** {@code inbox parked list}. */
    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "Lists parked keys, oldest first: consumer, ordering key, the dead message's key, how many"
                    + " messages wait (the dead one included), for how long, a pending request, and the last error.")
    static final class ListParked extends AdminCommand {
        @Option(names = "--limit", defaultValue = "100", description = "At most this many keys (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--consumer", paramLabel = "NAME", description = "Only this consumer's keys.")
        @Nullable String consumer;

        @Override
        public Integer call() {
            if (limit < 1 || limit > 10_000) {
                throw new ParameterException(spec.commandLine(), "--limit must be from 1 to 10000, but was " + limit);
            }
            List<ParkedKey> keys = withAdmin(ctx -> ctx.inbox().listParked(consumer, limit));
            Instant now = Instant.now();
            if (json) {
                List<Map<String, Object>> out = new ArrayList<>();
                for (ParkedKey k : keys) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("consumer", k.consumer());
                    m.put("orderingKey", k.orderingKey());
                    m.put("deadMessageKey", k.deadMessageKey());
                    m.put("messages", k.messages());
                    m.put("since", k.since().toString());
                    m.put("ageSeconds", Math.max(0, Duration.between(k.since(), now).getSeconds()));
                    m.put("requested", k.requested() == null ? null : k.requested().name());
                    m.put("reason", k.reason());
                    out.add(m);
                }
                printJson(out);
                return TxboxCli.OK;
            }
            if (keys.isEmpty()) {
                print("no parked keys" + (consumer == null ? "" : " of consumer " + consumer));
                return TxboxCli.OK;
            }
            List<String[]> table = new ArrayList<>();
            table.add(new String[] {"CONSUMER", "ORDERING KEY", "DEAD MESSAGE", "MESSAGES", "SINCE", "REQUESTED", "REASON"});
            for (ParkedKey k : keys) {
                table.add(new String[] {k.consumer(), k.orderingKey(), k.deadMessageKey() == null ? "-" : k.deadMessageKey(),
                    String.valueOf(k.messages()), k.since().truncatedTo(ChronoUnit.SECONDS).toString(),
                    k.requested() == null ? "-" : k.requested().name(), oneLine(k.reason())});
            }
            Tables.print(this, table);
            if (keys.size() == limit) {
                print("(first " + limit + " shown; use --limit for more)");
            }
            return TxboxCli.OK;
        }

        private static String oneLine(@Nullable String s) {
            if (s == null) {
                return "-";
            }
            String line = s.replaceAll("\\s+", " ");
            return line.length() > 100 ? line.substring(0, 99) + "…" : line;
        }
    }

    /** What retry and skip share: the key and the request. */
    abstract static class Request extends AdminCommand {
        @Option(names = "--consumer", required = true, paramLabel = "NAME", description = "The consumer that parked the key.")
        String consumer;

        @Option(names = "--key", required = true, paramLabel = "KEY", description = "The ordering key (see inbox parked list).")
        String key;

        abstract ParkedKey.Action action();

        @Override
        public Integer call() {
            boolean asked = withAdmin(ctx -> ctx.inbox().requestParked(consumer, key, action()));
            if (!asked) {
                throw new TxboxException("consumer " + consumer + " has no parked key " + key
                        + " (see inbox parked list)");
            }
            if (json) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("consumer", consumer);
                m.put("orderingKey", key);
                m.put("requested", action().name());
                printJson(m);
            } else {
                print("requested " + action().name().toLowerCase(java.util.Locale.ROOT) + " of parked key " + key
                        + " of consumer " + consumer + "; the running consumer carries it out through its handler"
                        + " (check with inbox parked list)");
            }
            return TxboxCli.OK;
        }
    }

    /** {@code inbox parked retry --consumer C --key K}. */
    @Command(name = "retry", mixinStandardHelpOptions = true,
            description = {"Asks the consumer to run the key's dead message again, then the key's other parked"
                    + " messages in order, each once through its handler.",
                "A message that fails again stops there and holds the key."})
    static final class Retry extends Request {
        @Override
        ParkedKey.Action action() {
            return ParkedKey.Action.RETRY;
        }
    }

    /** {@code inbox parked skip --consumer C --key K}. */
    @Command(name = "skip", mixinStandardHelpOptions = true,
            description = {"Asks the consumer to drop the key's dead message for good (a redelivery of it is a"
                    + " duplicate), then run the key's other parked messages in order."})
    static final class Skip extends Request {
        @Override
        ParkedKey.Action action() {
            return ParkedKey.Action.SKIP;
        }
    }
}
