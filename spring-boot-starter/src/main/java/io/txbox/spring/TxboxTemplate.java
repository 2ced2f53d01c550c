package io.txbox.spring;

import io.txbox.TxboxException;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.Receipt;
import io.txbox.internal.Args;
import io.txbox.internal.Transactions;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * txbox inside Spring transactions: the outbox and inbox calls run on the connection of the
 * current Spring transaction, so they commit or roll back with everything else the transaction
 * does through {@code JdbcTemplate}, JPA repositories or {@code @Transactional} services.
 *
 * <p>{@link #send}, {@link #sendAll}, {@link #receive} and {@link #storeResult} join the active
 * transaction and refuse with {@link IllegalStateException} when there is none, before writing
 * anything. {@link #process} runs in a transaction of the application's
 * {@link PlatformTransactionManager}, joining an outer one when there is one.
 *
 * <p>The connection is the one the transaction manager bound for the {@link DataSource}
 * ({@code DataSourceUtils.getConnection}): with a {@code DataSourceTransactionManager} or a
 * {@code JpaTransactionManager} on Hibernate, the very connection the business writes use. A
 * transaction manager that binds no connection for this data source (one for another data
 * source, or JTA without a transactional data source) is refused with
 * {@link IllegalStateException}, as the writes would otherwise commit on their own.
 *
 * <p>Thread-safe; the starter registers one as the {@code txboxTemplate} bean.
 */
public class TxboxTemplate {
    private final DataSource dataSource;
    private final Outbox outbox;
    private final Inbox inbox;
    private final TransactionTemplate transactions;

    /**
     * @param dataSource the data source the transaction manager manages and the txbox tables live in
     * @param transactionManager the application's transaction manager, for {@link #process}
     * @param outbox the outbox {@link #send} writes to
     * @param inbox the inbox {@link #receive} and {@link #process} record deliveries in
     */
    public TxboxTemplate(DataSource dataSource, PlatformTransactionManager transactionManager, Outbox outbox,
            Inbox inbox) {
        this.dataSource = Args.notNull(dataSource, "dataSource");
        this.outbox = Args.notNull(outbox, "outbox");
        this.inbox = Args.notNull(inbox, "inbox");
        this.transactions = new TransactionTemplate(Args.notNull(transactionManager, "transactionManager"));
        this.transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRED);
    }

    /**
     * {@link Outbox#send} in the current Spring transaction: the row commits if and only if
     * the transaction does. A second send of the same step key is a no-op.
     *
     * @return true if this call wrote the row, false if the step key was already there
     * @throws IllegalStateException if no Spring transaction is active; nothing is written
     */
    public boolean send(OutboxMessage message) {
        Args.notNull(message, "message");
        return inTransaction("send", c -> outbox.send(c, message));
    }

    /**
     * {@link Outbox#sendAll} in the current Spring transaction, one batched round trip.
     *
     * @return which messages were emitted, in order
     * @throws IllegalStateException if no Spring transaction is active; nothing is written
     */
    public List<Boolean> sendAll(List<OutboxMessage> messages) {
        Args.notNull(messages, "messages");
        return inTransaction("sendAll", c -> outbox.sendAll(c, messages));
    }

    /**
     * {@link Inbox#receive} in the current Spring transaction: the entry commits or rolls back
     * with the transaction's other writes. On FIRST, do the work in the same transaction.
     *
     * @throws IllegalStateException if no Spring transaction is active; nothing is written
     */
    public Receipt receive(InboundMessage message) {
        Args.notNull(message, "message");
        return inTransaction("receive", c -> inbox.receive(c, message));
    }

    /**
     * {@link Inbox#storeResult} in the current Spring transaction, after a {@link #receive}
     * that reported FIRST in that transaction.
     *
     * @throws IllegalStateException if no Spring transaction is active; nothing is written
     */
    public void storeResult(InboundMessage message, byte[] result) {
        Args.notNull(message, "message");
        Args.notNull(result, "result");
        inTransaction("storeResult", c -> {
            inbox.storeResult(c, message, result);
            return null;
        });
    }

    /**
     * Handles {@code message} once: in one Spring transaction (propagation REQUIRED, through the
     * application's transaction manager) it records the delivery, runs {@code handler} for a
     * first delivery, and stores the handler's result. The handler gets the transaction's
     * connection and may as well use {@code JdbcTemplate}, JPA repositories and
     * {@code @Transactional} services: all of it commits or rolls back together.
     *
     * <p>Without an outer transaction, the transaction commits here. If the handler throws,
     * its writes and the entry roll back, and the failure is counted and recorded in a
     * transaction of its own: the outcome is FAILED, or DEAD once {@code maxAttempts} is
     * reached. Serialization failures and deadlocks are not retried here (unlike
     * {@link Inbox#process}); they count as failures, and the message is delivered again.
     *
     * <p>Inside an outer transaction, everything joins it and commits or rolls back with it:
     * if it rolls back, the entry goes too, so a redelivery runs the handler again. A handler
     * exception marks the outer transaction rollback-only and is rethrown (a checked exception
     * wrapped in {@link TxboxException}); nothing is counted, as nothing was committed.
     *
     * @return PROCESSED (the handler ran; committed unless an outer transaction rolls back),
     *     DUPLICATE (an earlier delivery completed; nothing ran), DEAD or IN_FLIGHT (nothing ran),
     *     KEY_REUSED (the key was seen with another payload; nothing ran), or FAILED / DEAD after
     *     a handler failure without an outer transaction
     * @throws io.txbox.InvalidInputException if the key, tenant or payload size, or the
     *     handler's result, is refused; the transaction rolls back and nothing is counted
     */
    public Outcome process(InboundMessage message, Handler handler) {
        Args.notNull(message, "message");
        Args.notNull(handler, "handler");
        boolean outer = TransactionSynchronizationManager.isActualTransactionActive();
        try {
            return Objects.requireNonNull(transactions.execute(status -> handle(message, handler)));
        } catch (HandlerFailed failed) {
            Exception error = failed.error;
            if (outer) {
                if (error instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new TxboxException("handler for key " + message.key() + " of consumer " + inbox.consumer()
                        + " failed: " + error, error);
            }
            // the business transaction rolled back, so the failure is counted on a connection of its own
            return inbox.recordFailure(dataSource, message, error);
        }
    }

    private Outcome handle(InboundMessage message, Handler handler) {
        Connection c = connection("process");
        try {
            Receipt receipt;
            try {
                receipt = inbox.receive(c, message);
            } catch (KeyReuseException e) {
                return new Outcome(Outcome.Status.KEY_REUSED, null, 0, e.getMessage(), null);
            }
            switch (receipt.status()) {
                case DUPLICATE:
                    return new Outcome(Outcome.Status.DUPLICATE, receipt.result(), receipt.attempts(), null, null);
                case IN_FLIGHT:
                    return new Outcome(Outcome.Status.IN_FLIGHT, null, receipt.attempts(), null, null);
                case DEAD:
                    return new Outcome(Outcome.Status.DEAD, null, receipt.attempts(), receipt.reason(), null);
                case FIRST:
                default:
                    break;
            }
            byte[] result;
            try {
                result = handler.handle(c, message);
                Transactions.requireNotAborted(c, "process for consumer " + inbox.consumer() + " key " + message.key());
            } catch (Exception e) {
                throw new HandlerFailed(e);
            }
            if (result != null) {
                inbox.storeResult(c, message, result);
            }
            return new Outcome(Outcome.Status.PROCESSED, result, receipt.attempts(), null, null);
        } finally {
            DataSourceUtils.releaseConnection(c, dataSource);
        }
    }

    private <T> T inTransaction(String call, Function<Connection, T> work) {
        Connection c = connection(call);
        try {
            return work.apply(c);
        } finally {
            DataSourceUtils.releaseConnection(c, dataSource);
        }
    }

    private Connection connection(String call) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("TxboxTemplate." + call + " needs an active Spring transaction: call it"
                    + " from a @Transactional method or inside TransactionTemplate.execute, or use"
                    + " TxboxTemplate.process, which starts one");
        }
        Connection c = DataSourceUtils.getConnection(dataSource);
        boolean autoCommit;
        try {
            autoCommit = c.getAutoCommit();
        } catch (SQLException e) {
            DataSourceUtils.releaseConnection(c, dataSource);
            throw new TxboxException("TxboxTemplate." + call + " could not read the connection's auto-commit mode: "
                    + e.getMessage(), e, e.getSQLState());
        }
        if (autoCommit) {
            DataSourceUtils.releaseConnection(c, dataSource);
            throw new IllegalStateException("TxboxTemplate." + call + " found the Spring transaction active but its"
                    + " connection for " + dataSource + " in auto-commit mode: the transaction manager does not"
                    + " manage this DataSource, so the write would commit on its own. Use a transaction manager"
                    + " for this DataSource (DataSourceTransactionManager, or JpaTransactionManager on it)");
        }
        return c;
    }

    /** Carries a handler's exception out of the transaction callback, which rolls back on it. */
    private static final class HandlerFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient Exception error;

        HandlerFailed(Exception error) {
            super(null, error, false, false);
            this.error = error;
        }
    }

    @Override
    public String toString() {
        return "TxboxTemplate[consumer=" + inbox.consumer() + ", tables=" + outbox.tables() + "]";
    }

    /** The inbox {@link #receive} and {@link #process} record deliveries in. */
    public Inbox getInbox() {
        return inbox;
    }

    /** The data source this template runs on. */
    public DataSource getDataSource() {
        return dataSource;
    }
}
