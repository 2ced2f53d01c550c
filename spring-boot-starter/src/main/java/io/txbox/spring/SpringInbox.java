package io.txbox.spring;

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
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The {@link Inbox} bean: the library's inbox, except that {@link #process} refuses to run
 * inside an active Spring transaction. There it would commit the inbox entry on a connection
 * of its own while the handler's writes through Spring stay in the outer transaction, so an
 * outer rollback would leave the entry COMPLETED and the work undone.
 */
final class SpringInbox implements Inbox {
    private final Inbox delegate;

    SpringInbox(Inbox delegate) {
        this.delegate = delegate;
    }

    /** The library's inbox this bean wraps. */
    Inbox delegate() {
        return delegate;
    }

    @Override
    public Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("Inbox.process(DataSource, ..) was called for key " + message.key()
                    + " inside an active Spring transaction: it would commit the inbox entry on a connection of its"
                    + " own, so a rollback of the Spring transaction would lose the handler's work for good."
                    + " Call TxboxTemplate.process(message, handler) instead, which runs in the Spring transaction.");
        }
        return delegate.process(ds, message, handler);
    }

    @Override
    public io.txbox.inbox.ParkedKeys parkedKeys(DataSource ds) {
        return delegate.parkedKeys(ds);
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

    @Override
    public String toString() {
        return "SpringInbox[" + delegate + "]";
    }
}
