package io.txbox.saga;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SagaReportTest {
    static SagaReport report(long lost, long doubleEffects) {
        return new SagaReport(Map.of("orders", 1000L, "lost", lost, "double_effects", doubleEffects,
                "duplicate_deliveries", 216L));
    }

    @Test
    void verdict_nothingLostNothingTwice_isOnePlainPassLine() {
        assertThat(report(0, 0).verdict())
                .isEqualTo("PASS: 1,000 orders, 0 lost, 0 double effects, 216 duplicate deliveries absorbed");
    }

    @Test
    void verdict_aLostOrder_fails() {
        assertThat(report(1, 0).verdict())
                .isEqualTo("FAIL: 1,000 orders, 1 lost, 0 double effects, 216 duplicate deliveries absorbed");
    }

    @Test
    void progressLine_ordersAcceptedButNoneFinished_showsTheAcceptRateNotZero() {
        Progress.Snapshot early = new Progress.Snapshot(40, 0, 0, 0, 0, 0, 0);
        assertThat(Progress.line(early, 1000, 0, 2.0)).contains("accepted 40/1000")
                .endsWith("| 20 accepted/s, 0 finished/s");
    }
}
