package io.txbox.relay.internal;

import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The id a worker's claim starts above, so it does not walk the index entries of the rows it
 * deleted before: those stay in the primary key until a vacuum removes them, and while any
 * transaction that began before their delete is still open, every claim from the lowest id
 * visits each of them (a claim took 1.2 s after 5 minutes of such a transaction at 2,000 rows/s).
 *
 * <p>The floor only passes ids that can no longer appear below it, or per-key order breaks: a
 * later row of a key would be claimed above the floor while an earlier one, committed late, waits
 * below it. An id is safe once no transaction can still make a row at or below it visible or due:
 * <ol>
 *   <li>a <em>candidate</em>, the highest id claimed so far, is sampled together with the
 *       transactions then writing to the outbox ({@link RelayStore#outboxWriters}); every
 *       transaction that took a lower id and has not committed is among them, since a writer
 *       locks the table before it takes an id;</li>
 *   <li>a later sample that finds none of them still running makes the candidate <em>ready</em>:
 *       every row at or below it is now visible, and due to any transaction that begins after
 *       that sample, except rows sent with a delay;</li>
 *   <li>the next batch transaction claims from the current floor; if it committed with every row
 *       gone and its claims reached the candidate (or the end of the due rows), nothing due is
 *       left at or below the candidate, which becomes the floor.</li>
 * </ol>
 * A held key's later rows are left out by the claims, due or not, so the floor stays below the
 * lowest held row the transaction's lock saw ({@link #holdsFrom}).
 *
 * A row sent with a delay does not hold back its key (the {@code Relay} contract), so when it
 * comes due below the floor the full claim from the lowest id finds it, run at least every
 * {@link #RESCAN_NANOS}; so does a dead letter moved back with its id. A change of the claimed
 * lanes (taken over, lost, blocked or unblocked), a destination being skipped, a row left in the
 * outbox (retried, held, waiting) or an error on the worker's connection (a commit that failed,
 * or one the database lost in a crash) sets the floor back to the lowest id. Where the database
 * cannot tell its outbox writers ({@code null} from {@link RelayStore#outboxWriters}), the floor
 * stays at the lowest id.
 */
final class ClaimFloor {
    /** How often the claim starts from the lowest id anyway: every 5 s. */
    static final long RESCAN_NANOS = 5_000_000_000L;
    /** How often the worker asks which transactions write to the outbox: at most every 200 ms. */
    static final long SAMPLE_NANOS = 200_000_000L;

    private Set<Short> lanes = Set.of();
    private long floor;
    private long lastFullClaim;
    private boolean fullClaimSeen;
    /** The highest id claimed since the last reset. */
    private long claimed;
    private long candidate;
    private Set<String> candidateWriters = Set.of();
    private boolean ready;
    private long lastSample;
    private boolean sampled;
    /** The lowest held row the current transaction's lock saw; 0 for none. */
    private long heldAtLock;

    /**
     * The id the claim of {@code open} at {@code now} starts above; 0 for a full claim from the
     * lowest id, which this also counts as the rescan.
     */
    long claimAbove(List<Short> open, boolean skipping, long now) {
        if (skipping || open.size() != lanes.size() || !lanes.containsAll(open)) {
            reset();
            lanes = new HashSet<>(open);
        }
        if (floor == 0 || !fullClaimSeen || now - lastFullClaim >= RESCAN_NANOS) {
            lastFullClaim = now;
            fullClaimSeen = true;
            return 0;
        }
        return floor;
    }

    /**
     * A batch transaction committed. {@code lastId} is the highest id it claimed (0 for none),
     * {@code reachedEnd} whether one of its claims found fewer rows than it asked for, and
     * {@code allGone} whether every claimed row was deleted or dead-lettered.
     */
    void committed(long lastId, boolean reachedEnd, boolean allGone) {
        if (!allGone) {
            reset();
            return;
        }
        if (ready && (reachedEnd || lastId >= candidate)) {
            floor = Math.max(floor, candidate);
            candidate = 0;
            ready = false;
        }
        claimed = Math.max(claimed, lastId);
        // the claims left out the later rows of a key held at the lock, due or not; the transaction
        // may have ended that hold (its row published), so the next lock would not see it
        belowHeld();
    }

    /** Whether the worker should sample the outbox writers now: before its commit, after its last claim. */
    boolean sampleDue(long now) {
        return !sampled || now - lastSample >= SAMPLE_NANOS;
    }

    /**
     * The transactions writing to the outbox at {@code now}, sampled after every claim of the
     * current batch transaction; {@code null} where the database cannot tell.
     */
    void sampled(@Nullable Set<String> writers, long now) {
        lastSample = now;
        sampled = true;
        if (writers == null) {
            return;
        }
        if (candidate != 0) {
            ready = ready || Collections.disjoint(candidateWriters, writers);
        } else if (claimed > floor) {
            candidate = claimed;
            candidateWriters = writers;
            ready = false;
        }
    }

    /**
     * Keeps the floor below {@code heldFrom}, the lowest row a routing key of the claimed lanes
     * is held at (0 when none is): the rows of a held key wait in the outbox, unclaimed, and once
     * the key is released (its dead letter retried with its id, or skipped) they are claimed from
     * there, in id order. The floor stays below it until the next lock, even if the transaction
     * ends the hold: its claims did not reach the rows the hold kept back. Lowering the floor is
     * always safe.
     */
    void holdsFrom(long heldFrom) {
        heldAtLock = heldFrom;
        belowHeld();
    }

    private void belowHeld() {
        if (heldAtLock > 0 && floor >= heldAtLock) {
            floor = heldAtLock - 1;
        }
    }

    /** Back to full claims from the lowest id, until batches commit cleanly again. */
    void reset() {
        floor = 0;
        claimed = 0;
        candidate = 0;
        candidateWriters = Set.of();
        ready = false;
    }
}
