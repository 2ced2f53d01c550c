package io.txbox.inbox;

import io.txbox.internal.Args;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The database inbox: the {@link Inbox} API over its parts. Atomic mode, two-phase mode and
 * the operator calls each live in a class of their own; all of them reach the table only
 * through the {@link InboxStore} ({@link PostgresInboxStore} or {@link MariaDbInboxStore}, picked
 * by the database of the first connection a call gets), whose statements are rendered once.
 */
final class InboxImpl implements Inbox {
    private final InboxCore core;
    private final AtomicMode atomic;
    private final TwoPhaseMode twoPhase;
    private final Operators operators;

    InboxImpl(Inbox.Builder b) {
        this.core = new InboxCore(b);
        this.atomic = new AtomicMode(core);
        this.twoPhase = new TwoPhaseMode(core);
        this.operators = new Operators(core);
    }

    @Override
    public ParkedKeys parkedKeys(DataSource ds) {
        Args.notNull(ds, "ds");
        return new ParkedKeys(this, core, ds);
    }

    @Override
    public String consumer() {
        return core.consumer;
    }

    @Override
    public Fingerprint fingerprint() {
        return core.fingerprint;
    }

    @Override
    public Receipt receive(Connection tx, InboundMessage message) {
        return atomic.receive(tx, message);
    }

    @Override
    public List<Receipt> receiveAll(Connection tx, List<InboundMessage> messages) {
        return atomic.receiveAll(tx, messages);
    }

    @Override
    public void storeResult(Connection tx, InboundMessage message, byte[] result) {
        atomic.storeResult(tx, message, result);
    }

    @Override
    public Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        SpringTransactionGuard.refuseInside("Inbox.process(DataSource, ..)", core.consumer);
        return atomic.process(ds, message, handler);
    }

    @Override
    public List<Outcome> processChained(DataSource ds, List<InboundMessage> messages, Handler handler,
            Predicate<Outcome> more) {
        SpringTransactionGuard.refuseInside("Inbox.processChained(DataSource, ..)", core.consumer);
        return atomic.processChained(ds, messages, handler, more);
    }

    @Override
    public Outcome recordFailure(DataSource ds, InboundMessage message, Throwable error) {
        ownTransaction(ds, "Inbox.recordFailure(DataSource, ..)");
        return atomic.recordFailure(ds, message, error);
    }

    @Override
    public Claim claim(DataSource ds, InboundMessage message) {
        ownTransaction(ds, "Inbox.claim(DataSource, ..)");
        return twoPhase.claim(ds, message);
    }

    @Override
    public void complete(DataSource ds, Claim claim, byte @Nullable [] result) {
        ownTransaction(ds, "Inbox.complete(DataSource, ..)");
        twoPhase.complete(ds, claim, result, null, null);
    }

    @Override
    public void complete(Connection tx, Claim claim, byte @Nullable [] result) {
        twoPhase.complete(tx, claim, result, null, null);
    }

    @Override
    public void complete(DataSource ds, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(ds, "ds");
        Args.notNull(resultHeaders, "resultHeaders");
        Args.notNull(body, "body");
        ownTransaction(ds, "Inbox.complete(DataSource, ..)");
        twoPhase.complete(ds, claim, body, resultStatus, resultHeaders);
    }

    @Override
    public void complete(Connection tx, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(tx, "tx");
        Args.notNull(resultHeaders, "resultHeaders");
        Args.notNull(body, "body");
        twoPhase.complete(tx, claim, body, resultStatus, resultHeaders);
    }

    @Override
    public Outcome fail(DataSource ds, Claim claim, Throwable error) {
        ownTransaction(ds, "Inbox.fail(DataSource, ..)");
        return twoPhase.fail(ds, claim, error);
    }

    @Override
    public void release(DataSource ds, Claim claim) {
        ownTransaction(ds, "Inbox.release(DataSource, ..)");
        twoPhase.release(ds, claim);
    }

    @Override
    public boolean resetDead(DataSource ds, String key) {
        ownTransaction(ds, "Inbox.resetDead(DataSource, ..)");
        return operators.resetDead(ds, key, null);
    }

    @Override
    public boolean resetDead(DataSource ds, String key, @Nullable String tenant) {
        ownTransaction(ds, "Inbox.resetDead(DataSource, ..)");
        return operators.resetDead(ds, key, tenant);
    }

    @Override
    public List<DeadEntry> listDead(DataSource ds, int limit) {
        ownTransaction(ds, "Inbox.listDead(DataSource, ..)");
        return operators.listDead(ds, limit);
    }

    @Override
    public int purgeCompleted(DataSource ds) {
        ownTransaction(ds, "Inbox.purgeCompleted(DataSource)");
        return operators.purgeCompleted(ds);
    }

    @Override
    public RetentionTask retentionTask(DataSource ds, Duration every) {
        return operators.retentionTask(ds, every);
    }

    /** Refuses a call that commits on {@code ds} when that would commit a Spring transaction halfway. */
    private void ownTransaction(DataSource ds, String call) {
        Args.notNull(ds, "ds");
        SpringTransactionGuard.refuseTransactionalProxy(ds, call, core.consumer);
    }

    @Override
    public String toString() {
        return "Inbox[" + core.consumer + "]";
    }
}
