package io.txbox.relay.internal;

import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The id a worker's claim starts above, so it does not walk the index entries of the rows it
 * deleted before: those stay in the primary key until a vacuum removes them, and while any
 * transaction that began before their delete is still open, every claim from the lowest id
 * visits each of them in the table (a claim took 1.2 s after 5 minutes of such a transaction at
 * 2,000 rows/s).
 *
 * <p>The floor is the last id of a committed batch whose rows are all gone (confirmed or
 * dead-lettered), once {@link #SETTLE_NANOS} have passed since that commit: every row at or
 * below it that was visible then is gone, and a row that commits out of id order within that
 * time is still above the floor of the claims that could miss it. Rows that appear below the
 * floor later (a transaction that commits more than {@code SETTLE_NANOS} after taking its id, a
 * delayed row coming due, a dead letter moved back with its id) are found by the full claim from
 * the lowest id, run at least every {@link #RESCAN_NANOS}. A change of the claimed lanes (taken
 * over, lost, blocked or unblocked), a destination being skipped, a row left in the outbox
 * (retried, held, waiting) or an error on the worker's connection (a commit that failed, or one
 * the database lost in a crash) sets the floor back to the lowest id.
 */
final class ClaimFloor {
    /** How long after a batch's commit its last id becomes the floor: 1 s. */
    static final long SETTLE_NANOS = 1_000_000_000L;
    /** How often the claim starts from the lowest id anyway: every 5 s. */
    static final long RESCAN_NANOS = 5_000_000_000L;

    /** Candidate floors, oldest first: {ticker at commit, last id}. */
    private final ArrayDeque<long[]> pending = new ArrayDeque<>();
    private Set<Short> lanes = Set.of();
    private long floor;
    private long lastFullClaim;
    private boolean fullClaimSeen;

    /**
     * The id the claim of {@code open} at {@code now} starts above; 0 for a full claim from the
     * lowest id, which this also counts as the rescan.
     */
    long claimAbove(List<Short> open, boolean skipping, long now) {
        if (skipping || open.size() != lanes.size() || !lanes.containsAll(open)) {
            reset();
            lanes = new HashSet<>(open);
        }
        while (!pending.isEmpty() && now - pending.peekFirst()[0] >= SETTLE_NANOS) {
            floor = Math.max(floor, pending.pollFirst()[1]);
        }
        if (floor == 0 || !fullClaimSeen || now - lastFullClaim >= RESCAN_NANOS) {
            lastFullClaim = now;
            fullClaimSeen = true;
            return 0;
        }
        return floor;
    }

    /** A batch transaction committed at {@code now}; {@code lastId} is the highest id it claimed. */
    void committed(long lastId, boolean allGone, long now) {
        if (allGone) {
            pending.addLast(new long[] {now, lastId});
        } else {
            reset();
        }
    }

    /** Back to full claims from the lowest id, until batches commit cleanly again. */
    void reset() {
        pending.clear();
        floor = 0;
    }
}
