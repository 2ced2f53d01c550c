package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.internal.Args;
import io.txbox.internal.ErrorTexts;
import io.txbox.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Two-phase mode: {@code claim} commits a lease in database time, then {@code complete},
 * {@code fail} or {@code release} are fenced by the claim's attempt number and lease end.
 */
final class TwoPhaseMode {
    private final InboxCore core;
    private final InboxStore store;

    TwoPhaseMode(InboxCore core) {
        this.core = core;
        this.store = core.store;
    }

    Claim claim(DataSource ds, InboundMessage message) {
        Args.notNull(ds, "ds");
        Scope s = core.check(message);
        byte[] fp = core.fingerprintOf(message);
        Claim claim;
        try {
            claim = core.inOwnTransaction(ds, core.what("claim", s),
                    c -> store.claim(c, s, fp, new InboxStore.Answers<>() {
                        @Override
                        public Claim written(InboxStore.Written w) {
                            return w.dead()
                                    ? claimOf(s, Claim.Status.DEAD, w.attempts(), null, null, w.lastError())
                                    : claimOf(s, Claim.Status.ACQUIRED, w.attempts(), w, null, null);
                        }

                        @Override
                        public Claim keyReused(InboxStore.Entry e) {
                            throw core.keyReused(s);
                        }

                        @Override
                        public Claim completed(InboxStore.Entry e) {
                            return claimOf(s, Claim.Status.DUPLICATE, e.attempts(), null, e, null);
                        }

                        @Override
                        public Claim dead(InboxStore.Entry e) {
                            return claimOf(s, Claim.Status.DEAD, e.attempts(), null, null, e.lastError());
                        }

                        @Override
                        public Claim inFlight(InboxStore.Entry e) {
                            return claimOf(s, Claim.Status.IN_FLIGHT, e.attempts(), null, null, null);
                        }
                    }));
        } catch (KeyReuseException e) {
            core.notify(Outcome.Status.KEY_REUSED);
            throw e;
        }
        switch (claim.status()) {
            case ACQUIRED -> core.debug(s, "claimed");
            case IN_FLIGHT -> core.notify(Outcome.Status.IN_FLIGHT);
            case DUPLICATE -> core.notify(Outcome.Status.DUPLICATE);
            case DEAD -> {
                InboxCore.log.warn("{} - key {} is DEAD: {}", core.consumer, s.label(), claim.reason());
                core.notify(Outcome.Status.DEAD);
            }
        }
        return claim;
    }

    private Claim claimOf(Scope s, Claim.Status status, int attempts, InboxStore.@Nullable Written acquired,
            InboxStore.@Nullable Entry stored, @Nullable String reason) {
        return new Claim(core.consumer, s.key(), s.tenant(), status, attempts,
                acquired == null ? null : acquired.leaseUntil(),
                stored == null ? null : stored.result(), stored == null ? null : stored.resultStatus(),
                stored == null ? Map.of() : stored.headers(), reason);
    }

    private Scope checkClaim(Claim claim) {
        Args.notNull(claim, "claim");
        if (!claim.consumer().equals(core.consumer)) {
            throw new IllegalArgumentException("claim belongs to consumer " + Texts.quote(claim.consumer())
                    + ", not " + Texts.quote(core.consumer));
        }
        if (!claim.acquired()) {
            throw new IllegalArgumentException("only an ACQUIRED claim can be completed, failed or released, but "
                    + "this one is " + claim.status());
        }
        return core.scope(claim.key(), claim.tenant());
    }

    /** Completes in a transaction of its own. */
    void complete(DataSource ds, Claim claim, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers) {
        Args.notNull(ds, "ds");
        Scope s = checkClaim(claim);
        core.checkResult(s, result);
        core.inOwnTransaction(ds, core.what("complete", s), c -> completeIn(c, s, claim, result, resultStatus,
                headers));
    }

    /** Completes in the caller's transaction. */
    void complete(Connection tx, Claim claim, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers) {
        Args.notNull(tx, "tx");
        Scope s = checkClaim(claim);
        core.checkResult(s, result);
        Transactions.requireTransaction(tx, core.what("complete", s));
        try {
            completeIn(tx, s, claim, result, resultStatus, headers);
        } catch (SQLException e) {
            throw core.translate(core.what("complete", s), e);
        }
    }

    private Void completeIn(Connection c, Scope s, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) throws SQLException {
        if (!store.complete(c, s, claim, result, resultStatus, headers)) {
            throw leaseLost(s, claim);
        }
        core.debug(s, "completed");
        core.notify(Outcome.Status.PROCESSED);
        return null;
    }

    Outcome fail(DataSource ds, Claim claim, Throwable error) {
        Args.notNull(ds, "ds");
        Args.notNull(error, "error");
        Scope s = checkClaim(claim);
        String reason = ErrorTexts.describe(error);
        Outcome outcome = core.inOwnTransaction(ds, core.what("fail", s), c -> {
            InboxStore.Written w = store.fail(c, s, claim, reason);
            if (w == null) {
                throw leaseLost(s, claim);
            }
            core.logFailure(s, w.dead(), w.attempts(), w.failures(), reason);
            return new Outcome(w.dead() ? Outcome.Status.DEAD : Outcome.Status.FAILED, null, w.attempts(), reason,
                    error);
        });
        return core.report(outcome);
    }

    void release(DataSource ds, Claim claim) {
        Args.notNull(ds, "ds");
        Scope s = checkClaim(claim);
        core.inOwnTransaction(ds, core.what("release", s), c -> {
            if (!store.release(c, s, claim)) {
                throw leaseLost(s, claim);
            }
            return null;
        });
        core.debug(s, "released");
    }

    private LeaseLostException leaseLost(Scope s, Claim claim) {
        InboxCore.log.warn("{} - key {} lost its claim (fencing token {}): taken over, nothing written",
                core.consumer, s.label(), claim.fencingToken());
        return new LeaseLostException(core.consumer, s.key(), claim.fencingToken());
    }
}
