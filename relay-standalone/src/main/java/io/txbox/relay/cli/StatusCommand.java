package io.txbox.relay.cli;

import io.txbox.relay.RelayAdmin;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;

/** {@code status}: backlog, oldest pending age, dead counts per table, live relays. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = {"Shows the outbox backlog and the age of its oldest row, dead entries per table (outbox"
                + " dead letters, DEAD inbox entries), and the relay workers alive and lanes owned."})
final class StatusCommand extends AdminCommand {
    private record Report(RelayAdmin.Status relay, long inboxDead) {}

    @Override
    public Integer call() {
        Report r = withAdmin(ctx -> new Report(ctx.relay().status(), ctx.inbox().countDead()));
        RelayAdmin.Status s = r.relay();
        long inboxDead = r.inboxDead();
        if (json) {
            Map<String, Object> outbox = new LinkedHashMap<>();
            outbox.put("pending", s.outboxRows());
            outbox.put("ready", s.outboxReady());
            outbox.put("oldestPendingAgeSeconds", s.oldestPendingAge() == null ? null : s.oldestPendingAge().toMillis() / 1000.0);
            outbox.put("dead", s.outboxDead());
            outbox.put("oldestDeadAt", s.oldestDeadAt() == null ? null : s.oldestDeadAt().toString());
            Map<String, Object> relay = new LinkedHashMap<>();
            relay.put("members", s.relayMembers());
            relay.put("ownedLanes", s.ownedLanes());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("outbox", outbox);
            m.put("inbox", Map.of("dead", inboxDead));
            m.put("relay", relay);
            printJson(m);
        } else {
            print("outbox  pending " + s.outboxRows() + " (" + s.outboxReady() + " ready now), oldest "
                    + (s.oldestPendingAge() == null ? "-" : age(s.oldestPendingAge())));
            print("outbox  dead    " + s.outboxDead()
                    + (s.oldestDeadAt() == null ? "" : " (oldest dead since " + s.oldestDeadAt().truncatedTo(ChronoUnit.SECONDS) + ")"));
            print("inbox   dead    " + inboxDead);
            print("relay   " + s.relayMembers() + " worker(s) alive, " + s.ownedLanes() + " lane(s) owned");
        }
        return TxboxCli.OK;
    }

    /** {@code 3d4h12m5s}, or milliseconds under a second. */
    private static String age(Duration d) {
        return d.getSeconds() == 0 ? d.toMillis() + "ms" : human(d);
    }

    private static String human(Duration d) {
        long s = d.getSeconds();
        StringBuilder sb = new StringBuilder();
        if (s >= 86400) {
            sb.append(s / 86400).append('d');
            s %= 86400;
        }
        if (s >= 3600) {
            sb.append(s / 3600).append('h');
            s %= 3600;
        }
        if (s >= 60) {
            sb.append(s / 60).append('m');
            s %= 60;
        }
        if (s > 0 || sb.length() == 0) {
            sb.append(s).append('s');
        }
        return sb.toString();
    }
}
