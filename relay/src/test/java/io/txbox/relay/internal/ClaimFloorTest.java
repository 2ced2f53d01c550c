package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ClaimFloorTest {
    private static final List<Short> LANES = List.of((short) 1, (short) 2);
    private static final long MS = 1_000_000L;

    private final ClaimFloor floor = new ClaimFloor();

    /** A floor at {@code id}: a clean batch committed at 0, its settle time passed, the full claim just run. */
    private long settledAt(long id) {
        floor.claimAbove(LANES, false, 0);
        floor.committed(id, true, 0);
        return floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS);
    }

    @Test
    void claimAbove_cleanBatch_becomesTheFloorOnlyAfterTheSettleTime() {
        assertThat(floor.claimAbove(LANES, false, 0)).isZero();
        floor.committed(500, true, 0);
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS - MS)).isZero();
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS)).isEqualTo(500);
    }

    @Test
    void claimAbove_rescanDue_claimsFromTheLowestIdOnceAndKeepsTheFloor() {
        assertThat(settledAt(500)).isEqualTo(500);
        // the last full claim ran at 0
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.RESCAN_NANOS)).isZero();
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.RESCAN_NANOS + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_rescanFindsLowerId_floorDoesNotMoveBack() {
        settledAt(500);
        floor.committed(40, true, 2 * MS); // a late row found by a full claim
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS + 3 * MS)).isEqualTo(500);
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS * 2 + 3 * MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_rowLeftInTheOutbox_startsFromTheLowestIdAgain() {
        settledAt(500);
        floor.committed(900, false, 2 * MS); // a retry: its row must not fall below the floor
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS * 3)).isZero();
    }

    @Test
    void claimAbove_lanesChanged_startsFromTheLowestIdAgain() {
        settledAt(500);
        assertThat(floor.claimAbove(List.of((short) 1), false, ClaimFloor.SETTLE_NANOS + MS)).isZero();
    }

    @Test
    void claimAbove_sameLanesInAnotherOrder_keepsTheFloor() {
        settledAt(500);
        assertThat(floor.claimAbove(List.of((short) 2, (short) 1), false, ClaimFloor.SETTLE_NANOS + MS)).isEqualTo(500);
    }

    @Test
    void claimAbove_destinationSkipped_startsFromTheLowestIdAgain() {
        settledAt(500);
        assertThat(floor.claimAbove(LANES, true, ClaimFloor.SETTLE_NANOS + MS)).isZero();
    }

    @Test
    void reset_afterAnError_startsFromTheLowestIdAgain() {
        settledAt(500);
        floor.reset();
        assertThat(floor.claimAbove(LANES, false, ClaimFloor.SETTLE_NANOS + MS)).isZero();
    }
}
