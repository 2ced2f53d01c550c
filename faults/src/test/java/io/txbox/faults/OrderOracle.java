package io.txbox.faults;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Receipt;
import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.sql.DataSource;

/**
 * Checks one order history against the relay's promises, from what the broker holds:
 * <ul>
 *   <li>every committed row was published, and no rolled-back one;
 *   <li>per key, a row of a transaction that committed before the next one began is published
 *       before that one's rows ({@link KeyOrder} over the writers' sequence numbers); delayed rows
 *       are only checked for arrival;
 *   <li>a row published twice only in a history with a fault that allows it (anything but a
 *       stall), and an inbox consumer turns every duplicate into exactly one effect;
 *   <li>the poison key ({@link Parking}): its poison row never published, and none of its later
 *       rows before the history released the parked key (skipped the dead row);
 *   <li>nothing dead-lettered (the skipped poison row is gone), nothing left in the outbox.
 * </ul>
 * A failure names the seed and, per broken key, the shortest stretch of the history that shows
 * it: the key's records in broker order from the overtaking one to the late one, the key's
 * transactions between them, and the faults in that time.
 */
final class OrderOracle {
    private OrderOracle() {}

    /** A record read back: its place in the read, step key, {@code key:seq} payload, broker time (ms since the history began, -1 if unknown). */
    record Received(int index, String stepKey, String payload, long brokerMs, String where) {
        String key() {
            return payload.substring(0, payload.lastIndexOf(':'));
        }

        long seq() {
            return Long.parseLong(payload.substring(payload.lastIndexOf(':') + 1));
        }
    }

    /** The outcome of one history. */
    record Verdict(long seed, String combo, int committed, int rolledBack, int delayed, int records, long duplicates,
            int violations, List<String> problems, String report) {
        boolean ok() {
            return problems.isEmpty();
        }

        String summary() {
            return String.format("seed %d on %s: %d rows committed (%d delayed), %d rolled back, %d records read, "
                    + "%d duplicates, %d order violations%s", seed, combo, committed, delayed, rolledBack, records,
                    duplicates, violations, ok() ? "" : ": " + String.join("; ", problems));
        }
    }

    /**
     * The poison key of a history: its row {@code seq} ({@code stepKey}) was refused for good and
     * parked the key until the history skipped it at {@code releasedAtMs}; none of the key's later
     * rows may reach the broker before then, and the skipped row is not lost.
     */
    record Parking(String key, long seq, String stepKey, long releasedAtMs) {}

    static Verdict check(OrderPlan plan, String combo, OrderLog log, List<Received> received, long dead, long left,
            DataSource ds, TxboxTables tables, Parking parking) {
        List<OrderLog.Write> writes = log.writes();
        Map<String, OrderLog.Write> byStep = new HashMap<>();
        writes.forEach(w -> byStep.put(w.stepKey(), w));
        List<String> problems = new ArrayList<>();
        StringBuilder report = new StringBuilder();

        Set<String> publishedSteps = new HashSet<>();
        Set<String> unknown = new TreeSet<>();
        Set<String> phantom = new TreeSet<>();
        Set<String> whileParked = new TreeSet<>();
        KeyOrder order = new KeyOrder();
        for (Received r : received) {
            publishedSteps.add(r.stepKey());
            OrderLog.Write w = byStep.get(r.stepKey());
            if (w == null) {
                unknown.add(r.stepKey() + "=" + r.payload());
                continue;
            }
            if (w.outcome() == OrderLog.Outcome.ROLLED_BACK) {
                phantom.add(w.toString());
            }
            if (!w.delayed()) {
                order.add(w.key(), w.seq());
            }
            if (w.key().equals(parking.key()) && w.seq() > parking.seq() && r.brokerMs() < parking.releasedAtMs()) {
                whileParked.add(w + " reached the broker at " + r.brokerMs() + " ms, before the release at "
                        + parking.releasedAtMs() + " ms");
            }
        }
        Set<String> lost = new TreeSet<>();
        int committed = 0;
        int rolledBack = 0;
        int delayed = 0;
        for (OrderLog.Write w : writes) {
            if (w.outcome() == OrderLog.Outcome.COMMITTED) {
                committed++;
                delayed += w.delayed() ? 1 : 0;
                if (!publishedSteps.contains(w.stepKey()) && !w.stepKey().equals(parking.stepKey())) {
                    lost.add(w.toString());
                }
            } else if (w.outcome() == OrderLog.Outcome.ROLLED_BACK) {
                rolledBack++;
            }
        }
        long duplicates = received.size() - publishedSteps.size();
        if (!lost.isEmpty()) {
            problems.add(lost.size() + " committed rows never published");
            report.append("\n  never published: ").append(first(lost));
        }
        if (!phantom.isEmpty()) {
            problems.add(phantom.size() + " rolled-back rows published");
            report.append("\n  rolled back yet published: ").append(first(phantom));
        }
        if (!whileParked.isEmpty()) {
            problems.add(whileParked.size() + " rows of the parked key published before its release");
            report.append("\n  published while parked: ").append(first(whileParked));
        }
        if (publishedSteps.contains(parking.stepKey())) {
            problems.add("the poison row " + parking.stepKey() + " was published");
        }
        if (!unknown.isEmpty()) {
            problems.add(unknown.size() + " records no writer wrote");
            report.append("\n  unknown records: ").append(first(unknown));
        }
        if (duplicates > 0 && !plan.allowsDuplicates()) {
            problems.add(duplicates + " duplicates without a fault that allows them");
        }
        if (dead > 0) {
            problems.add(dead + " rows dead-lettered");
        }
        if (left > 0) {
            problems.add(left + " rows left in the outbox");
        }
        if (order.violationCount() > 0) {
            problems.add(order.violationCount() + " per-key order violations");
            report.append(explain(order, received, byStep, log));
        }
        checkInbox(plan, ds, tables, received, problems);
        Verdict v = new Verdict(plan.seed(), combo, committed, rolledBack, delayed, received.size(), duplicates,
                order.violationCount(), problems, "");
        if (v.ok()) {
            return v;
        }
        String header = "\n" + v.summary() + "\n  replay: faults/run order --seed " + plan.seed() + " --db "
                + (combo.startsWith("PostgreSQL") ? "postgresql" : "mariadb") + " --broker "
                + (combo.endsWith("Kafka") ? "kafka" : "rabbitmq") + "  (or -Dtxbox.order.seed=" + plan.seed() + ")"
                + "\n  plan: " + plan;
        return new Verdict(v.seed(), combo, committed, rolledBack, delayed, received.size(), duplicates,
                order.violationCount(), problems, header + report);
    }

    /**
     * Per broken key, its first violation: the record that overtook (the highest seq before the
     * late one), every record of the key from it to the late one in broker order, the key's
     * transactions from the late one's to the overtaking one's, and the faults from the late
     * transaction's begin to the late record's arrival.
     */
    private static String explain(KeyOrder order, List<Received> received, Map<String, OrderLog.Write> byStep,
            OrderLog log) {
        StringBuilder out = new StringBuilder();
        Map<String, List<Received>> byKey = new HashMap<>();
        for (Received r : received) {
            OrderLog.Write w = byStep.get(r.stepKey());
            if (w != null && !w.delayed()) {
                byKey.computeIfAbsent(w.key(), k -> new ArrayList<>()).add(r);
            }
        }
        Set<String> explained = new HashSet<>();
        for (String violation : order.violations()) {
            String key = violation.substring(4, violation.indexOf(':'));
            if (!explained.add(key) || explained.size() > 5) {
                continue;
            }
            List<Received> rs = byKey.get(key);
            Set<Long> seen = new HashSet<>();
            long highest = Long.MIN_VALUE;
            int highestAt = -1;
            for (int i = 0; i < rs.size(); i++) {
                long seq = rs.get(i).seq();
                if (!seen.add(seq)) {
                    continue;
                }
                if (seq < highest) {
                    Received late = rs.get(i);
                    Received over = rs.get(highestAt);
                    OrderLog.Write lateW = byStep.get(late.stepKey());
                    OrderLog.Write overW = byStep.get(over.stepKey());
                    out.append("\n  key ").append(key).append(": seq ").append(seq).append(" (id ").append(lateW.id())
                            .append(") published after seq ").append(highest).append(" (id ").append(overW.id())
                            .append(")").append("\n    records of ").append(key).append(" in broker order:");
                    for (int j = highestAt; j <= i; j++) {
                        Received r = rs.get(j);
                        OrderLog.Write w = byStep.get(r.stepKey());
                        out.append("\n      ").append(r.where()).append(" seq ").append(r.seq()).append(" id ")
                                .append(w.id()).append(r.brokerMs() >= 0 ? " at " + r.brokerMs() + " ms" : "");
                    }
                    out.append("\n    transactions of ").append(key).append(":");
                    for (OrderLog.Write w : log.writes()) {
                        if (w.key().equals(key) && w.seq() >= seq && w.seq() <= highest) {
                            out.append("\n      ").append(w);
                        }
                    }
                    long from = lateW.beginMs();
                    long to = late.brokerMs() >= 0 ? late.brokerMs() : Long.MAX_VALUE;
                    out.append("\n    faults and relay events from ").append(from).append(" ms")
                            .append(to == Long.MAX_VALUE ? "" : " to " + to + " ms").append(":");
                    for (OrderLog.Event e : log.events()) {
                        if (e.ms() >= from - 1000 && e.ms() <= to) {
                            out.append("\n      ").append(e);
                        }
                    }
                    break;
                }
                highest = seq;
                highestAt = i;
            }
        }
        return out.toString();
    }

    /**
     * Every record through an inbox, in broker order, as a consumer would get them ({@code
     * receive} and the effect in one transaction per 100 records): one effect per step key,
     * every duplicate absorbed.
     */
    private static void checkInbox(OrderPlan plan, DataSource ds, TxboxTables tables, List<Received> received,
            List<String> problems) {
        Effects effects = new Effects(ds);
        String consumer = "order-" + plan.seed();
        Inbox inbox = Inbox.builder(consumer).tables(tables).build();
        Set<String> steps = new HashSet<>();
        long absorbed = 0;
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            int inTx = 0;
            for (Received r : received) {
                if (r.stepKey() == null) {
                    continue;
                }
                steps.add(r.stepKey());
                Receipt receipt = inbox.receive(c, InboundMessage.of(r.stepKey(), r.payload().getBytes(StandardCharsets.UTF_8)));
                if (receipt.isFirst()) {
                    Effects.apply(c, consumer, r.stepKey());
                } else {
                    absorbed++;
                }
                if (++inTx == 100) {
                    c.commit();
                    inTx = 0;
                }
            }
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException("inbox check failed: " + e, e);
        }
        Map<String, Integer> counts = effects.countsByKey(consumer);
        long wrong = steps.stream().filter(s -> counts.getOrDefault(s, 0) != 1).count();
        if (wrong > 0 || counts.size() != steps.size() || absorbed != received.size() - steps.size()) {
            problems.add(wrong + " step keys without exactly one inbox effect (" + counts.size() + " keys with effects, "
                    + steps.size() + " published, " + absorbed + " duplicates absorbed)");
        }
    }

    private static String first(Set<String> items) {
        return items.size() <= 10 ? items.toString() : new ArrayList<>(items).subList(0, 10) + " ...";
    }
}
