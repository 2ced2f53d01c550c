package io.txbox.inbox;

import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What {@link Inbox#receive} found for a message.
 *
 * <p>The result array is not copied; do not change it. {@link #toString()} shows its length,
 * never its content.
 *
 * @param status see {@link Status}
 * @param result for {@link Status#DUPLICATE}: the bytes stored by the first delivery, if any
 * @param resultStatus for {@link Status#DUPLICATE}: the stored status code (HTTP), if any
 * @param attempts deliveries that got as far as the handler, this one included when FIRST
 * @param reason for {@link Status#DEAD}: the last error recorded
 */
public record Receipt(
        Status status, byte @Nullable [] result, @Nullable Integer resultStatus, int attempts, @Nullable String reason) {

    /** How a delivery relates to the ones before it. */
    public enum Status {
        /** No earlier delivery completed: run the business logic, in this transaction. */
        FIRST,
        /** An earlier delivery completed: skip the business logic; {@link #result()} holds its result. */
        DUPLICATE,
        /** A two-phase worker holds a live lease on this key: try again later. */
        IN_FLIGHT,
        /** The key failed too often: skip it, ack and dead-letter; {@link #reason()} says why. */
        DEAD
    }

    public Receipt {
        io.txbox.internal.Args.notNull(status, "status");
    }

    /** {@code true} when the business logic should run. */
    public boolean isFirst() {
        return status == Status.FIRST;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Receipt r && status == r.status && Arrays.equals(result, r.result)
                && Objects.equals(resultStatus, r.resultStatus) && attempts == r.attempts
                && Objects.equals(reason, r.reason);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, Arrays.hashCode(result), resultStatus, attempts, reason);
    }

    @Override
    public String toString() {
        return "Receipt[" + status + ", attempts=" + attempts
                + (result == null ? "" : ", result=" + result.length + " bytes")
                + (resultStatus == null ? "" : ", resultStatus=" + resultStatus)
                + (reason == null ? "" : ", reason=" + reason) + "]";
    }
}
