package io.txbox.relay.internal;

import org.jspecify.annotations.Nullable;

/** What happened to one claimed row in a batch. */
record Outcome(Kind kind, @Nullable String error) {
    /**
     * HELD: not sent because an earlier row of its lane failed; retried without counting an
     * attempt. WAIT: its destination's target is missing; due again at once, without counting
     * an attempt and without blocking its lane, while the relay skips the destination for a pause.
     */
    enum Kind { CONFIRMED, RETRY, HELD, WAIT, PERMANENT, NO_ROUTE }

    static final Outcome CONFIRMED = new Outcome(Kind.CONFIRMED, null);

    static Outcome retry(String error) {
        return new Outcome(Kind.RETRY, error);
    }

    static Outcome held(String error) {
        return new Outcome(Kind.HELD, error);
    }

    static Outcome waiting(String error) {
        return new Outcome(Kind.WAIT, error);
    }

    static Outcome permanent(String error) {
        return new Outcome(Kind.PERMANENT, error);
    }

    static Outcome noRoute(String error) {
        return new Outcome(Kind.NO_ROUTE, error);
    }
}
