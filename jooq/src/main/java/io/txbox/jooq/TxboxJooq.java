package io.txbox.jooq;

import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Receipt;
import io.txbox.internal.Args;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import java.util.List;
import org.jooq.DSLContext;

/**
 * Runs {@link Outbox#send}, {@link Outbox#sendAll} and {@link Inbox#receive} on the JDBC
 * connection behind a jOOQ {@link DSLContext}, so the txbox row commits or rolls back with the
 * jOOQ transaction. Use the context of the transaction ({@code cfg.dsl()} inside
 * {@code transactionResult}), not a context on a bare {@code DataSource}, whose connection
 * is in auto-commit mode and is refused.
 *
 * <p>This module is compiled against the application's jOOQ (scope {@code provided}); txbox's
 * own table access uses a private, relocated copy of jOOQ, so the two never meet.
 */
public final class TxboxJooq {
    private TxboxJooq() {}

    /** {@link Outbox#send(java.sql.Connection, OutboxMessage)} on {@code tx}'s connection. */
    public static boolean send(DSLContext tx, Outbox outbox, OutboxMessage message) {
        Args.notNull(tx, "tx");
        Args.notNull(outbox, "outbox");
        Args.notNull(message, "message");
        return tx.connectionResult(c -> outbox.send(c, message));
    }

    /** {@link Outbox#sendAll(java.sql.Connection, List)} on {@code tx}'s connection. */
    public static List<Boolean> sendAll(DSLContext tx, Outbox outbox, List<OutboxMessage> messages) {
        Args.notNull(tx, "tx");
        Args.notNull(outbox, "outbox");
        Args.notNull(messages, "messages");
        return tx.connectionResult(c -> outbox.sendAll(c, messages));
    }

    /** {@link Inbox#receive(java.sql.Connection, InboundMessage)} on {@code tx}'s connection. */
    public static Receipt receive(DSLContext tx, Inbox inbox, InboundMessage message) {
        Args.notNull(tx, "tx");
        Args.notNull(inbox, "inbox");
        Args.notNull(message, "message");
        return tx.connectionResult(c -> inbox.receive(c, message));
    }
}
