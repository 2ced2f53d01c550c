package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ClaimFloorTest {
    private static final List<Short> LANES = List.of((short) 1, (short) 2);
    private static final long MS = 1_000_000L;
    private static final Set<String> NONE = Set.of();

    private final ClaimFloor floor = new ClaimFloor();
    private long now;

    /** One clean batch transaction: its first claim, its commit, and the writer sample after it. */
    private long batch(long lastId, boolean reachedEnd, Set<String> writersAfter) {
        now += MS;
        long above = floor.claimAbove(LANES, false, now);
        floor.committed(lastId, reachedEnd, true);
        now += ClaimFloor.SAMPLE_NANOS;
        floor.sampled(writersAfter, now);
        return above;
    }

    /** A floor at {@code id}: claimed, sampled with no writer, found ready, then covered by a claim. */
    private void floorAt(long id) {
        batch(id, true, NONE); // candidate
        batch(0, true, NONE); // ready
        batch(0, true, NONE); // promoted
        assertThat(floor.claimAbove(LANES, false, now + MS)).isEqualTo(id);
    }

    @Test
    void claimAbove_noWriterEverRunning_becomesTheFloorAfterTwoSamplesAndACoveringClaim() {
        assertThat(batch(500, true, NONE)).isZero();
        assertThat(batch(0, true, NONE)).isZero();
        assertThat(batch(0, true, NONE)).isZero();
        assertThat(floor.claimAbove(LANES, false, now + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_writerStillRunning_floorWaitsUntilItEnds() {
        batch(500, true, Set.of("7:5/1")); // a transaction that may hold an id below 500 is running
        for (int i = 0; i < 5; i++) {
            assertThat(batch(0, true, Set.of("7:5/1", "8:6/" + i))).as("pass %d", i).isZero();
        }
        batch(0, true, Set.of("8:6/9")); // it ended: ready
        assertThat(batch(0, true, NONE)).isZero(); // the claim after readiness covers the candidate
        assertThat(floor.claimAbove(LANES, false, now + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_claimAfterReadinessStoppedShortOfTheCandidate_floorWaits() {
        batch(500, true, NONE);
        batch(0, true, NONE); // ready
        batch(300, false, NONE); // a full batch below the candidate: rows up to 500 may be left
        assertThat(floor.claimAbove(LANES, false, now + MS)).isZero();
        batch(520, false, NONE); // reached past the candidate
        assertThat(floor.claimAbove(LANES, false, now + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_databaseCannotTellItsWriters_staysAtTheLowestId() {
        for (int i = 0; i < 5; i++) {
            now += MS;
            assertThat(floor.claimAbove(LANES, false, now)).isZero();
            floor.committed(500 + i, true, true);
            now += ClaimFloor.SAMPLE_NANOS;
            floor.sampled(null, now);
        }
    }

    @Test
    void claimAbove_rescanDue_claimsFromTheLowestIdOnceAndKeepsTheFloor() {
        floorAt(500);
        now += ClaimFloor.RESCAN_NANOS;
        assertThat(floor.claimAbove(LANES, false, now)).isZero();
        assertThat(floor.claimAbove(LANES, false, now + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_holdEndedInTheTransactionThatPromotesTheFloor_staysBelowTheRowsItHeldBack() {
        batch(500, true, NONE); // candidate 500, above rows 120 and 130 that a hold at 100 keeps unclaimed
        batch(0, true, NONE); // ready
        now += MS;
        floor.holdsFrom(100); // the lanes' lock sees the hold at row 100
        floor.claimAbove(LANES, false, now);
        floor.committed(100, true, true); // row 100 published: the same transaction ends the hold
        floor.holdsFrom(0); // the next lock sees no hold, and rows 120 and 130 are due
        assertThat(floor.claimAbove(LANES, false, now + MS)).isLessThan(100);
    }

    @Test
    void claimAbove_rowLeftInTheOutbox_startsFromTheLowestIdAgain() {
        floorAt(500);
        floor.committed(900, true, false); // a retry: its row must not fall below the floor
        assertThat(floor.claimAbove(LANES, false, now + MS)).isZero();
    }

    @Test
    void claimAbove_lanesChanged_startsFromTheLowestIdAgain() {
        floorAt(500);
        assertThat(floor.claimAbove(List.of((short) 1), false, now + MS)).isZero();
    }

    @Test
    void claimAbove_sameLanesInAnotherOrder_keepsTheFloor() {
        floorAt(500);
        assertThat(floor.claimAbove(List.of((short) 2, (short) 1), false, now + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_destinationSkipped_startsFromTheLowestIdAgain() {
        floorAt(500);
        assertThat(floor.claimAbove(LANES, true, now + MS)).isZero();
    }

    @Test
    void reset_afterAnError_startsFromTheLowestIdAgain() {
        floorAt(500);
        floor.reset();
        assertThat(floor.claimAbove(LANES, false, now + MS)).isZero();
    }

    @Test
    void sampleDue_atMostEverySampleInterval() {
        assertThat(floor.sampleDue(0)).isTrue();
        floor.sampled(NONE, 0);
        assertThat(floor.sampleDue(ClaimFloor.SAMPLE_NANOS - 1)).isFalse();
        assertThat(floor.sampleDue(ClaimFloor.SAMPLE_NANOS)).isTrue();
    }
}
