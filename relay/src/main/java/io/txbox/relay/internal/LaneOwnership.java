package io.txbox.relay.internal;

import io.txbox.internal.MissingTables;
import io.txbox.outbox.Lanes;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where lane ownership lives: one worker's membership and lanes. The worker registers as a member
 * with a lease, takes or releases lanes toward a fair share of the {@value Lanes#COUNT} lanes
 * among the live members ({@link #rebalanceIfDue}), locks and renews its lanes in every batch and
 * notices a lane taken over by another member through the lane's fence ({@link #lock}), and
 * releases everything when it stops ({@link #leave}). The statements are the {@link LaneStore}'s.
 * Only the worker's own thread calls it, except {@link #count()}.
 */
final class LaneOwnership {
    private static final Logger log = LoggerFactory.getLogger(LaneOwnership.class);
    /** While the share is not reached yet (right after start), rebalance at least this often. */
    private static final long QUICK_REBALANCE_NANOS = 250_000_000L;
    private static final long MIN_REBALANCE_NANOS = 50_000_000L;
    /** Rebalances right after start that come quickly, while the relay's workers settle on their shares. */
    private static final int QUICK_REBALANCES = 8;

    private final LaneStore store;
    private final String memberId;
    /** This relay's workers, this one among them: counted as live from the start. */
    private final List<String> relayWorkers;
    private final Duration lease;
    private final LongSupplier ticker;
    private final long rebalanceNanos;
    private final long renewNanos;

    /** Lanes held, with the fence each was taken at. */
    private final Map<Short, Long> owned = new LinkedHashMap<>();
    private volatile int ownedCount;
    private boolean lanesInitialised;
    private long nextRebalance;
    private long lastRenew;
    private int rebalances;
    /**
     * The next rebalance is only one of the start-up look-agains of a worker that already holds
     * its share: it waits for the end of the current transaction instead of cutting its chain of
     * batches short (see {@link #due}).
     */
    private boolean lookAgainOnly;
    /** Live members seen by the last batch; a change triggers a rebalance right away. */
    private int seenMembers = -1;

    /** See {@link #heldFrom()}. */
    private long heldFrom;

    LaneOwnership(LaneStore store, String memberId, List<String> relayWorkers, Duration lease, LongSupplier ticker) {
        this.store = store;
        this.memberId = memberId;
        this.relayWorkers = List.copyOf(relayWorkers);
        this.lease = lease;
        this.ticker = ticker;
        this.rebalanceNanos = Math.max(lease.toNanos() / 6, MIN_REBALANCE_NANOS);
        this.renewNanos = lease.toNanos() / 4;
        long now = ticker.getAsLong();
        this.nextRebalance = now;
        this.lastRenew = now - Long.MAX_VALUE / 2;
    }

    /** Lanes held right now; safe from any thread. */
    int count() {
        return ownedCount;
    }

    /** Nanoseconds until this member must run again to rebalance or renew its lanes' lease; at least 1 ms. */
    long nanosUntilDue() {
        long untilRebalance = nextRebalance - ticker.getAsLong();
        return Math.max(1_000_000L, Math.min(untilRebalance, renewNanos));
    }

    /**
     * Whether a rebalance or the renewal of the lanes' lease is due now: both need a new
     * transaction, so a due one ends the worker's chain of batches. A start-up look-again of a
     * worker that holds its share does not: it runs at the next transaction, which a busy worker
     * starts within a few batches anyway, while a chain cut every 250 ms would leave its broker
     * channel empty at every commit.
     */
    boolean due() {
        long now = ticker.getAsLong();
        return now - nextRebalance >= 0 && !lookAgainOnly || now - lastRenew >= renewNanos;
    }

    /** Re-reads ownership at the next chance, after a reconnect. */
    void rebalanceSoon() {
        nextRebalance = ticker.getAsLong();
        lookAgainOnly = false;
    }

    /** Rebalances if it is time to; commits its own transactions on {@code c}. */
    void rebalanceIfDue(Connection c) throws SQLException {
        if (ticker.getAsLong() - nextRebalance < 0) {
            return;
        }
        boolean belowShare = rebalance(c);
        // right after start, or while lanes this worker should hold are still leased to a member
        // that is about to release them or whose lease is about to end: look again soon
        boolean soon = ++rebalances < QUICK_REBALANCES || belowShare;
        lookAgainOnly = soon && !belowShare;
        nextRebalance = ticker.getAsLong() + (soon ? Math.min(rebalanceNanos, QUICK_REBALANCE_NANOS) : rebalanceNanos);
    }

    /**
     * Heartbeat, then take or release lanes toward a fair share among live members, counting all
     * of this relay's workers from the start. Returns whether this worker still holds fewer lanes
     * than its share.
     */
    private boolean rebalance(Connection c) throws SQLException {
        if (!lanesInitialised) {
            store.initLanes(c);
            c.commit();
            lanesInitialised = true;
        }
        int live = Math.max(1, store.heartbeat(c, memberId, relayWorkers, lease));
        c.commit();
        int share = (Lanes.COUNT + live - 1) / live;
        Map<Short, Long> current = store.owned(c, memberId);
        if (current.size() > share) {
            List<Short> surplus = new ArrayList<>(current.keySet()).subList(share, current.size());
            store.release(c, memberId, surplus);
            c.commit();
            log.debug("{} - released lanes {} ({} live members, share {})", memberId, surplus, live, share);
            List.copyOf(surplus).forEach(current::remove);
        } else if (current.size() < share) {
            Map<Short, Long> taken = store.take(c, memberId, share - current.size(), lease);
            c.commit();
            current.putAll(taken);
            if (!taken.isEmpty()) {
                lastRenew = ticker.getAsLong() - Long.MAX_VALUE / 2;
                log.debug("{} - took lanes {} ({} live members, share {})", memberId, taken.keySet(), live, share);
            }
        } else {
            c.commit();
        }
        owned.clear();
        owned.putAll(current);
        ownedCount = owned.size();
        return owned.size() < share && live <= Lanes.COUNT;
    }

    /**
     * In the batch's transaction: locks this member's lanes (renewing their lease when due),
     * drops the lanes another member took over (their fence moved on), and returns the lanes
     * still held that are not blocked (a lane block is what relays before per-key holds wrote;
     * this relay holds keys instead, {@link RelayStore#hold}). Empty when no lane is held.
     */
    List<Short> lock(Connection c) throws SQLException {
        heldFrom = 0;
        if (owned.isEmpty()) {
            return List.of();
        }
        long started = ticker.getAsLong();
        boolean renew = started - lastRenew >= renewNanos;
        LaneStore.Locked locked = store.lockLanes(c, memberId, owned, renew, lease);
        Map<Short, Boolean> held = locked.held();
        heldFrom = locked.heldFrom();
        if (renew) {
            lastRenew = started;
        }
        if (locked.members() >= 0 && locked.members() != seenMembers) {
            if (seenMembers >= 0) {
                nextRebalance = started; // a member joined or left: move toward the new share before the next batch
                lookAgainOnly = false;
            }
            seenMembers = locked.members();
        }
        if (held.size() < owned.size()) {
            List<Short> lost = new ArrayList<>(owned.keySet());
            lost.removeAll(held.keySet());
            owned.keySet().removeAll(lost);
            ownedCount = owned.size();
            log.info("{} - lanes {} were taken over by another relay (fence changed); no longer publishing them",
                    memberId, lost);
        }
        List<Short> open = new ArrayList<>(held.size());
        held.forEach((lane, blocked) -> {
            if (!blocked) {
                open.add(lane);
            }
        });
        return open;
    }

    /**
     * The lowest row id a routing key of the lanes is held at ({@link RelayStore#hold}), as the
     * last {@link #lock} read it; 0 when no key of them is held.
     */
    long heldFrom() {
        return heldFrom;
    }

    /**
     * Releases the lanes and the membership, so another relay takes them over at once instead of
     * after the lease. On a fresh connection from {@code dataSource}: at shutdown the worker's own
     * one may be broken, although a pool's proxy may still report it open.
     */
    void leave(DataSource dataSource) {
        boolean interrupted = false;
        try {
            for (int attempt = 0; ; attempt++) {
                try {
                    release(dataSource);
                    log.debug("{} - released lanes {}", memberId, owned.keySet());
                    return;
                } catch (SQLException | RuntimeException e) {
                    // close() interrupts a worker still busy after the shutdown timeout; landing
                    // here, the interrupt makes the pool refuse the connection: clear it, try once more
                    if (attempt == 0 && Thread.interrupted()) {
                        interrupted = true;
                        continue;
                    }
                    if (MissingTables.isUndefinedTable(e)) {
                        // nothing to release, and the relay has already said what to do about it
                        log.debug("{} - no lanes to release: the txbox tables do not exist", memberId);
                        return;
                    }
                    log.warn("{} - could not release lanes on close; they free up when the lease ends: {}", memberId,
                            e.toString());
                    return;
                }
            }
        } finally {
            owned.clear();
            ownedCount = 0;
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void release(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                store.leave(c, memberId);
                c.commit();
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }
}
