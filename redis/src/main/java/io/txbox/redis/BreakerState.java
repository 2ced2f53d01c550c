package io.txbox.redis;

/** The state of the circuit breaker around Redis in a {@link HybridInbox}. */
public enum BreakerState {
    /** Redis answers: every delivery asks it first. */
    CLOSED,
    /** Redis failed repeatedly: every delivery goes straight to the database until the open time has passed. */
    OPEN,
    /** The open time has passed: one delivery probes Redis; success closes the breaker, failure opens it again. */
    HALF_OPEN
}
