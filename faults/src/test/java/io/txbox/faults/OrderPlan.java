package io.txbox.faults;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * Everything a seed decides about one order history before it runs: the relays, the writers'
 * length and the faults with their moments. The writers draw their think times, slow commits,
 * delays and rollbacks from the same seed as they go.
 */
record OrderPlan(long seed, List<Relay> relays, int mainKeys, long writeMs, boolean brokerOutage, List<Fault> faults) {

    /** One relay: a child JVM or an in-process {@code Relay}, with its batch size. */
    record Relay(boolean child, int batchSize) {}

    enum Kind {
        /** SIGSTOP of a child shorter than the lane lease. */
        STOP_SHORT,
        /** SIGSTOP of a child past the lane lease: its lanes are taken over, its batch goes stale. */
        STOP_LONG,
        /** SIGKILL of a child, started again a little later. */
        KILL,
        /** A graceful close and start of any relay. */
        RESTART,
        /** {@code pg_terminate_backend} (MariaDB: {@code KILL}) of a relay session. */
        TERMINATE_SESSION,
        /** The broker stopped, then started again. */
        BROKER_OUTAGE,
        /** An in-process relay's worker held in a listener callback. */
        STALL
    }

    /** A fault at {@code atMs} since the writers began, on relay {@code slot}, lasting {@code durationMs}. */
    record Fault(long atMs, Kind kind, int slot, long durationMs) {
        @Override
        public String toString() {
            return kind + "@" + atMs + "ms(r" + slot + ", " + durationMs + "ms)";
        }
    }

    /** Whether a fault of the history may publish a row twice (a stall alone may not). */
    boolean allowsDuplicates() {
        return faults.stream().anyMatch(f -> f.kind() != Kind.STALL);
    }

    static OrderPlan of(long seed, long writeMs) {
        Random r = new Random(seed);
        int children = r.nextInt(3);
        int inProcess = r.nextInt(3);
        if (children + inProcess == 0) {
            inProcess = 1;
        }
        if (children + inProcess > 3) {
            inProcess = 3 - children;
        }
        int[] batchSizes = {10, 50, 200};
        List<Relay> relays = new ArrayList<>();
        for (int i = 0; i < children + inProcess; i++) {
            relays.add(new Relay(i < children, batchSizes[r.nextInt(batchSizes.length)]));
        }
        List<Kind> kinds = new ArrayList<>(List.of(Kind.RESTART, Kind.TERMINATE_SESSION));
        if (children > 0) {
            kinds.addAll(List.of(Kind.STOP_SHORT, Kind.STOP_LONG, Kind.STOP_LONG, Kind.KILL, Kind.KILL));
        }
        if (inProcess > 0) {
            kinds.addAll(List.of(Kind.STALL, Kind.STALL));
        }
        boolean outage = r.nextInt(4) == 0;
        List<Fault> faults = new ArrayList<>();
        if (outage) {
            faults.add(new Fault(500 + r.nextLong(Math.max(1, writeMs - 2500)), Kind.BROKER_OUTAGE, 0,
                    1000 + r.nextLong(1500)));
        }
        int count = 1 + r.nextInt(3) + (int) (writeMs / 10_000);
        for (int i = 0; i < count; i++) {
            Kind kind = kinds.get(r.nextInt(kinds.size()));
            int slot = switch (kind) {
                case STOP_SHORT, STOP_LONG, KILL -> r.nextInt(children);
                case STALL -> children + r.nextInt(inProcess);
                default -> r.nextInt(children + inProcess);
            };
            long lease = OrderRelayChild.LANE_LEASE.toMillis();
            long duration = switch (kind) {
                case STOP_SHORT -> 300 + r.nextLong(lease - 600);
                case STOP_LONG -> lease + 500 + r.nextLong(1500);
                case KILL -> 200 + r.nextLong(1500);
                case STALL -> 1100 + r.nextLong(1400);
                default -> 0;
            };
            faults.add(new Fault(300 + r.nextLong(Math.max(1, writeMs - 800)), kind, slot, duration));
        }
        faults.sort(Comparator.comparingLong(Fault::atMs));
        return new OrderPlan(seed, List.copyOf(relays), 4 + r.nextInt(4), writeMs, outage, List.copyOf(faults));
    }

    @Override
    public String toString() {
        long children = relays.stream().filter(Relay::child).count();
        return "seed " + seed + ": " + children + " child relay(s), " + (relays.size() - children)
                + " in-process, batch sizes " + relays.stream().map(Relay::batchSize).toList() + ", " + mainKeys
                + " keys with slow commits, " + writeMs + " ms of writes, faults " + faults;
    }
}
