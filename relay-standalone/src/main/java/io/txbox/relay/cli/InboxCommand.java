package io.txbox.relay.cli;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code inbox purge | parked ...}: retention of completed inbox entries, and parked ordering keys. */
@Command(name = "inbox", mixinStandardHelpOptions = true, description = "Maintains the inbox table.",
        subcommands = {InboxCommand.Purge.class, ParkedCommand.class})
final class InboxCommand extends CommandGroup {
    @Override
    String subcommands() {
        return "purge or parked";
    }

    /** {@code inbox purge --older-than D}. */
    @Command(name = "purge", mixinStandardHelpOptions = true,
            description = {"Deletes COMPLETED inbox entries completed more than --older-than ago (by this host's"
                    + " clock, as the inbox library's retention does), in batches, a consumer's tenant entries"
                    + " included.",
                "Choose it longer than any redelivery you expect: a message redelivered after its entry is gone"
                    + " runs again.",
                "DEAD, FAILED and in-flight entries are kept."})
    static final class Purge extends AdminCommand {
        @Option(names = "--older-than", required = true, paramLabel = "DURATION", converter = DurationConverter.class,
                description = "Like 30d, 12h or P30D.")
        Duration olderThan;

        @Option(names = "--consumer", paramLabel = "NAME", description = "Only this consumer's entries (its tenants' included).")
        @Nullable String consumer;

        @Option(names = "--dry-run", description = "Only count what would be deleted.")
        boolean dryRun;

        @Override
        public Integer call() {
            long n = withAdmin(ctx -> dryRun ? ctx.inbox().countCompleted(olderThan, consumer)
                    : ctx.inbox().purgeCompleted(olderThan, consumer));
            printPurge(n, dryRun, "completed inbox", olderThan, consumer == null ? "" : " of consumer " + consumer);
            return TxboxCli.OK;
        }
    }
}
