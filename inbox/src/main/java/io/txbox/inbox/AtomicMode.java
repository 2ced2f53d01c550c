package io.txbox.inbox;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.TxboxException;
import io.txbox.internal.Args;
import io.txbox.internal.ErrorTexts;
import io.txbox.internal.TransactionFrame;
import io.txbox.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Atomic mode: the entry is written in the business transaction ({@code receive},
 * {@code storeResult}), or in one the inbox runs ({@code process}); failures are counted in a
 * transaction of their own ({@code recordFailure}).
 */
final class AtomicMode {
    private final InboxCore core;
    private final InboxStore store;

    AtomicMode(InboxCore core) {
        this.core = core;
        this.store = core.store;
    }

    /** How a receive's classification reads as a {@link Receipt}; a reused key throws. */
    private InboxStore.Answers<Receipt> receipts(Scope s) {
        return new InboxStore.Answers<>() {
            @Override
            public Receipt written(InboxStore.Written w) {
                return new Receipt(Receipt.Status.FIRST, null, null, w.attempts(), null);
            }

            @Override
            public Receipt keyReused(InboxStore.Entry e) {
                throw core.keyReused(s);
            }

            @Override
            public Receipt completed(InboxStore.Entry e) {
                core.debug(s, "duplicate");
                return new Receipt(Receipt.Status.DUPLICATE, e.result(), e.resultStatus(), e.attempts(), null);
            }

            @Override
            public Receipt dead(InboxStore.Entry e) {
                return new Receipt(Receipt.Status.DEAD, null, null, e.attempts(), e.lastError());
            }

            @Override
            public Receipt inFlight(InboxStore.Entry e) {
                return new Receipt(Receipt.Status.IN_FLIGHT, null, null, e.attempts(), null);
            }
        };
    }

    Receipt receive(Connection tx, InboundMessage message) {
        Args.notNull(tx, "tx");
        Scope s = core.check(message);
        byte[] fp = core.fingerprintOf(message);
        // Auto-commit would commit the entry before the business writes: the very gap the inbox closes.
        Transactions.requireTransaction(tx, core.what("receive", s));
        try {
            Receipt receipt = store.receive(tx, s, fp, receipts(s));
            core.notify(statusOf(receipt));
            return receipt;
        } catch (KeyReuseException e) {
            core.notify(Outcome.Status.KEY_REUSED);
            throw e;
        } catch (SQLException e) {
            throw core.translate(core.what("receive", s), e);
        }
    }

    List<Receipt> receiveAll(Connection tx, List<InboundMessage> messages) {
        Args.notNull(tx, "tx");
        Args.notNull(messages, "messages");
        List<Scope> scopes = new ArrayList<>(messages.size());
        List<byte @Nullable []> fps = new ArrayList<>(messages.size());
        List<InboxStore.Answers<Receipt>> answers = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            InboundMessage message = Args.notNull(messages.get(i), "messages[" + i + "]");
            Scope s = core.check(message);
            scopes.add(s);
            fps.add(core.fingerprintOf(message));
            answers.add(receipts(s));
        }
        if (messages.isEmpty()) {
            return List.of();
        }
        Transactions.requireTransaction(tx, core.what("receive", scopes.get(0)));
        try {
            List<Receipt> receipts = store.receiveAll(tx, scopes, fps, answers);
            for (Receipt receipt : receipts) {
                core.notify(statusOf(receipt));
            }
            return receipts;
        } catch (KeyReuseException e) {
            core.notify(Outcome.Status.KEY_REUSED);
            throw e;
        } catch (SQLException e) {
            throw core.translate(core.what("receive", scopes.get(0)) + " and " + (scopes.size() - 1)
                    + " more", e);
        }
    }

    void storeResult(Connection tx, InboundMessage message, byte[] result) {
        Args.notNull(tx, "tx");
        Args.notNull(result, "result");
        Scope s = core.check(message);
        core.checkResult(s, result);
        Transactions.requireTransaction(tx, core.what("store result", s));
        try {
            if (store.storeResult(tx, s, result) == 0) {
                throw new TxboxException("cannot store a result for " + core.what(s)
                        + ": receive did not report FIRST for it in this transaction (a result stored by an "
                        + "earlier transaction is never replaced); call receive in the same transaction first "
                        + "and store only when it reports FIRST");
            }
        } catch (SQLException e) {
            throw core.translate(core.what("store result", s), e);
        }
    }

    Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        Args.notNull(ds, "ds");
        Args.notNull(handler, "handler");
        Scope s = core.check(message);
        byte[] fp = core.fingerprintOf(message);
        Throwable handlerError = null;
        for (int attempt = 0; handlerError == null; attempt++) {
            boolean lastTry = attempt >= core.transactionRetries;
            try (Connection c = ds.getConnection(); TransactionFrame tx = InboxCore.begin(c)) {
                Receipt receipt;
                try {
                    receipt = store.receive(c, s, fp, receipts(s));
                } catch (KeyReuseException e) {
                    return core.report(new Outcome(Outcome.Status.KEY_REUSED, null, 0, e.getMessage(), null));
                }
                if (!receipt.isFirst()) {
                    return core.report(outcomeOf(receipt));
                }
                byte[] result;
                try {
                    result = handled(c, s, message, handler);
                } catch (Exception e) {
                    try {
                        tx.rollback();
                    } catch (SQLException lost) {
                        // The connection died under the handler: nothing committed, and the
                        // handler is not to blame, so no attempt is counted.
                        e.addSuppressed(lost);
                        throw new RetryableException(core.what("process", s)
                                + " lost its database connection; nothing was committed: " + e, e);
                    }
                    if (isConflict(e) && !lastTry) {
                        core.debug(s, "handler hit a serialization failure or deadlock; retrying");
                        continue;
                    }
                    handlerError = e;
                    continue;
                }
                // Refused as documented, outside the handler's failure path: the frame rolls
                // everything back and no attempt is counted, so no row is written.
                saveResult(c, s, result);
                tx.commit();
                return core.report(new Outcome(Outcome.Status.PROCESSED, result, receipt.attempts(), null, null));
            } catch (SQLException e) {
                if (isConflict(e) && !lastTry) {
                    core.debug(s, "transaction hit a serialization failure or deadlock; retrying");
                    continue;
                }
                throw core.translate(core.what("process", s), e);
            }
        }
        // The business transaction is closed, so the failure is counted on a fresh connection.
        return recordFailure(ds, message, handlerError);
    }

    /**
     * {@link #process} for each message in order, one transaction each, on one connection; each
     * transaction's commit goes with the next message's receive ({@link InboxStore#commitAndReceive}).
     * A message's outcome is reported once its commit is known to have gone through. Stops after
     * an outcome {@code more} refuses (asked for a PROCESSED one before its commit, which then
     * runs alone), and before a message it leaves to {@link #process}: one whose transaction
     * failed or whose commit is unknown, one the inbox refuses, or one whose handler hit a
     * conflict.
     */
    List<Outcome> processChained(DataSource ds, List<InboundMessage> messages, Handler handler,
            Predicate<Outcome> more) {
        Args.notNull(ds, "ds");
        Args.notNull(messages, "messages");
        Args.notNull(handler, "handler");
        Args.notNull(more, "more");
        List<Outcome> outcomes = new ArrayList<>(messages.size());
        try (Connection c = ds.getConnection(); TransactionFrame tx = InboxCore.begin(c)) {
            // A PROCESSED outcome whose transaction is still open: the next round trip commits it.
            Outcome open = null;
            for (InboundMessage message : messages) {
                Scope s;
                try {
                    s = core.check(message);
                } catch (InvalidInputException e) {
                    break;
                }
                byte[] fp = core.fingerprintOf(message);
                Receipt receipt;
                try {
                    receipt = open == null ? store.receive(c, s, fp, receipts(s))
                            : store.commitAndReceive(c, s, fp, receipts(s));
                } catch (InboxStore.AfterCommit e) {
                    outcomes.add(core.report(open));
                    open = null;
                    break;
                } catch (SQLException | RuntimeException e) {
                    open = null; // its commit is unknown: process runs it again, the inbox dedups
                    break;
                }
                if (open != null) {
                    outcomes.add(core.report(open));
                    open = null;
                }
                Outcome settled;
                if (!receipt.isFirst()) {
                    settled = core.report(outcomeOf(receipt));
                    outcomes.add(settled);
                    c.rollback();
                } else {
                    Exception failure = null;
                    byte[] result = null;
                    try {
                        result = handled(c, s, message, handler);
                    } catch (Exception e) {
                        failure = e;
                    }
                    if (failure == null) {
                        try {
                            saveResult(c, s, result);
                        } catch (InvalidInputException e) {
                            break; // process refuses it again, after rolling back
                        }
                        if (c.getAutoCommit()) {
                            break; // the handler turned auto-commit on: process meets what that left
                        }
                        open = new Outcome(Outcome.Status.PROCESSED, result, receipt.attempts(), null, null);
                        if (!more.test(open)) {
                            break;
                        }
                        continue;
                    }
                    c.rollback();
                    if (isConflict(failure)) {
                        break; // process retries the transaction
                    }
                    settled = recordFailure(c, s, fp, failure);
                    outcomes.add(settled);
                }
                if (!more.test(settled)) {
                    break;
                }
            }
            if (open != null) {
                tx.commit();
                outcomes.add(core.report(open));
            } else {
                tx.rollback(); // what a failed round trip left open, if anything
            }
        } catch (SQLException | RuntimeException e) {
            // The rest is left to process, which meets the failure again and reports it.
        }
        return outcomes;
    }

    /** A first delivery's handler run, in its transaction on {@code c}: its result, or what it threw. */
    private byte @Nullable [] handled(Connection c, Scope s, InboundMessage message, Handler handler)
            throws Exception {
        byte[] result = handler.handle(c, message);
        Transactions.requireNotAborted(c, core.what("process", s));
        return result;
    }

    /** Stores a handler's result in its transaction; a result over {@code maxPayloadBytes} is refused first. */
    private void saveResult(Connection c, Scope s, byte @Nullable [] result) throws SQLException {
        core.checkResult(s, result);
        if (result != null) {
            store.storeResult(c, s, result);
        }
    }

    Outcome recordFailure(DataSource ds, InboundMessage message, Throwable error) {
        Args.notNull(ds, "ds");
        Args.notNull(error, "error");
        Scope s = core.check(message);
        byte[] fp = core.fingerprintOf(message);
        String reason = ErrorTexts.describe(error);
        return core.inOwnTransactionRetrying(ds, core.what("record failure", s),
                c -> recordFailure(c, s, fp, error, reason));
    }

    /** Counts a handler failure in a transaction of its own on {@code c}, which has none open. */
    private Outcome recordFailure(Connection c, Scope s, byte @Nullable [] fp, Throwable error) {
        String reason = ErrorTexts.describe(error);
        return core.inOwnTransactionRetrying(c, core.what("record failure", s),
                tx -> recordFailure(tx, s, fp, error, reason));
    }

    private Outcome recordFailure(Connection c, Scope s, byte @Nullable [] fp, Throwable error, String reason)
            throws SQLException {
        Outcome outcome = store.recordFailure(c, s, fp, reason, new InboxStore.Answers<>() {
            @Override
            public Outcome written(InboxStore.Written w) {
                core.logFailure(s, w.dead(), w.attempts(), w.failures(), reason);
                return new Outcome(w.dead() ? Outcome.Status.DEAD : Outcome.Status.FAILED, null,
                        w.attempts(), reason, error);
            }

            @Override
            public Outcome keyReused(InboxStore.Entry e) {
                return new Outcome(Outcome.Status.KEY_REUSED, null, e.attempts(),
                        new KeyReuseException(core.consumer, s.key(), s.tenant()).getMessage(), error);
            }

            @Override
            public Outcome completed(InboxStore.Entry e) {
                return new Outcome(Outcome.Status.DUPLICATE, e.result(), e.attempts(), null, null);
            }

            @Override
            public Outcome dead(InboxStore.Entry e) {
                return new Outcome(Outcome.Status.DEAD, null, e.attempts(), e.lastError(), error);
            }

            @Override
            public Outcome inFlight(InboxStore.Entry e) {
                return new Outcome(Outcome.Status.IN_FLIGHT, null, e.attempts(), null, error);
            }
        });
        return core.report(outcome);
    }

    private static Outcome outcomeOf(Receipt r) {
        return new Outcome(statusOf(r), r.status() == Receipt.Status.DUPLICATE ? r.result() : null, r.attempts(),
                r.status() == Receipt.Status.DEAD ? r.reason() : null, null);
    }

    private static Outcome.Status statusOf(Receipt r) {
        return switch (r.status()) {
            case FIRST -> Outcome.Status.PROCESSED;
            case DUPLICATE -> Outcome.Status.DUPLICATE;
            case IN_FLIGHT -> Outcome.Status.IN_FLIGHT;
            case DEAD -> Outcome.Status.DEAD;
        };
    }

    private static boolean isConflict(Throwable e) {
        return InboxCore.isConflict(e);
    }
}
