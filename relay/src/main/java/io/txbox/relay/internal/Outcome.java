package io.txbox.relay.internal;

import org.jspecify.annotations.Nullable;

/** What happened to one claimed row in a batch. */
record Outcome(Kind kind, @Nullable String error) {
    /** HELD: not sent because an earlier row of its lane failed; retried without counting an attempt. */
    enum Kind { CONFIRMED, RETRY, HELD, PERMANENT, NO_ROUTE }

    static final Outcome CONFIRMED = new Outcome(Kind.CONFIRMED, null);

    static Outcome retry(String error) {
        return new Outcome(Kind.RETRY, error);
    }

    static Outcome held(String error) {
        return new Outcome(Kind.HELD, error);
    }

    static Outcome permanent(String error) {
        return new Outcome(Kind.PERMANENT, error);
    }

    static Outcome noRoute(String error) {
        return new Outcome(Kind.NO_ROUTE, error);
    }
}
