package io.txbox.relay.internal;

import org.jspecify.annotations.Nullable;

/** What happened to one claimed row in a batch; the settle step acts on it. */
record RowOutcome(Kind kind, @Nullable String error) {
    /** Longest last_error / dead-letter reason stored, in chars. */
    static final int MAX_ERROR_CHARS = 2000;

    /**
     * HELD: not sent because an earlier row of its routing key failed; retried without counting an
     * attempt. WAIT: its destination's target is missing; due again at once, without counting
     * an attempt and without blocking its lane, while the relay skips the destination for a pause.
     */
    enum Kind { CONFIRMED, RETRY, HELD, WAIT, PERMANENT, NO_ROUTE }

    static final RowOutcome CONFIRMED = new RowOutcome(Kind.CONFIRMED, null);

    static RowOutcome retry(String error) {
        return new RowOutcome(Kind.RETRY, error);
    }

    static RowOutcome held(String error) {
        return new RowOutcome(Kind.HELD, error);
    }

    static RowOutcome waiting(String error) {
        return new RowOutcome(Kind.WAIT, error);
    }

    static RowOutcome permanent(String error) {
        return new RowOutcome(Kind.PERMANENT, error);
    }

    static RowOutcome noRoute(String error) {
        return new RowOutcome(Kind.NO_ROUTE, error);
    }

    /** {@code s} cut to {@link #MAX_ERROR_CHARS}, as stored. */
    static String clip(String s) {
        return s.length() <= MAX_ERROR_CHARS ? s : s.substring(0, MAX_ERROR_CHARS - 3) + "...";
    }
}
