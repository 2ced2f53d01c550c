package io.txbox.inbox.internal;

import io.txbox.inbox.Claim;
import io.txbox.inbox.DeadEntry;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.Receipt;
import io.txbox.inbox.RetentionTask;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * An {@link Inbox} that hands every abstract call to another: the base of the inbox's
 * decorators (the Redis front, the Spring bean), which override only the calls they change.
 * The interface's default methods ({@code receiveAll}, {@code processChained},
 * {@code twoPhase}, {@code parkedKeys}) are not forwarded: they run here over the forwarded
 * calls, so a decorator's override of {@code receive} or {@code process} applies to them too.
 */
public abstract class ForwardingInbox implements Inbox {
    private final Inbox delegate;

    protected ForwardingInbox(Inbox delegate) {
        this.delegate = delegate;
    }

    /** The inbox the calls go to. */
    protected final Inbox delegate() {
        return delegate;
    }

    @Override
    public String consumer() {
        return delegate.consumer();
    }

    @Override
    public Fingerprint fingerprint() {
        return delegate.fingerprint();
    }

    @Override
    public Receipt receive(Connection tx, InboundMessage message) {
        return delegate.receive(tx, message);
    }

    @Override
    public void storeResult(Connection tx, InboundMessage message, byte[] result) {
        delegate.storeResult(tx, message, result);
    }

    @Override
    public Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        return delegate.process(ds, message, handler);
    }

    @Override
    public Outcome recordFailure(DataSource ds, InboundMessage message, Throwable error) {
        return delegate.recordFailure(ds, message, error);
    }

    @Override
    public Claim claim(DataSource ds, InboundMessage message) {
        return delegate.claim(ds, message);
    }

    @Override
    public void complete(DataSource ds, Claim claim, byte @Nullable [] result) {
        delegate.complete(ds, claim, result);
    }

    @Override
    public void complete(Connection tx, Claim claim, byte @Nullable [] result) {
        delegate.complete(tx, claim, result);
    }

    @Override
    public void complete(DataSource ds, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        delegate.complete(ds, claim, resultStatus, resultHeaders, body);
    }

    @Override
    public void complete(Connection tx, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        delegate.complete(tx, claim, resultStatus, resultHeaders, body);
    }

    @Override
    public Outcome fail(DataSource ds, Claim claim, Throwable error) {
        return delegate.fail(ds, claim, error);
    }

    @Override
    public void release(DataSource ds, Claim claim) {
        delegate.release(ds, claim);
    }

    @Override
    public boolean resetDead(DataSource ds, String key) {
        return delegate.resetDead(ds, key);
    }

    @Override
    public boolean resetDead(DataSource ds, String key, @Nullable String tenant) {
        return delegate.resetDead(ds, key, tenant);
    }

    @Override
    public List<DeadEntry> listDead(DataSource ds, int limit) {
        return delegate.listDead(ds, limit);
    }

    @Override
    public int purgeCompleted(DataSource ds) {
        return delegate.purgeCompleted(ds);
    }

    @Override
    public RetentionTask retentionTask(DataSource ds, Duration every) {
        return delegate.retentionTask(ds, every);
    }
}
