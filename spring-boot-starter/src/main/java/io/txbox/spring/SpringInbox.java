package io.txbox.spring;

import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.internal.ForwardingInbox;
import javax.sql.DataSource;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The {@link Inbox} bean: the library's inbox, except that {@link #process} refuses to run
 * inside an active Spring transaction. There it would commit the inbox entry on a connection
 * of its own while the handler's writes through Spring stay in the outer transaction, so an
 * outer rollback would leave the entry COMPLETED and the work undone.
 */
final class SpringInbox extends ForwardingInbox {
    SpringInbox(Inbox delegate) {
        super(delegate);
    }

    @Override
    public Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("Inbox.process(DataSource, ..) was called for key " + message.key()
                    + " inside an active Spring transaction: it would commit the inbox entry on a connection of its"
                    + " own, so a rollback of the Spring transaction would lose the handler's work for good."
                    + " Call TxboxTemplate.process(message, handler) instead, which runs in the Spring transaction.");
        }
        return delegate().process(ds, message, handler);
    }

    @Override
    public io.txbox.inbox.ParkedKeys parkedKeys(DataSource ds) {
        return delegate().parkedKeys(ds);
    }

    @Override
    public String toString() {
        return "SpringInbox[" + delegate() + "]";
    }
}
