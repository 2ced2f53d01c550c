package io.txbox.outbox;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.ByDialect;
import io.txbox.internal.MissingTables;
import io.txbox.internal.Tracing;
import io.txbox.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link Outbox}: checks the messages and the transaction, writes through its {@link OutboxStore}. */
final class OutboxImpl implements Outbox {
    private static final Logger log = LoggerFactory.getLogger(Outbox.class);

    private final TxboxTables tables;
    private final int maxRecordBytes;
    /** Destinations in CDC mode; null for every destination. */
    private final Set<String> captured;
    /** Chosen by the database of the first transaction sent on, then kept. */
    private final ByDialect<OutboxStore> store;
    private final Tracing tracing = Tracing.global();
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    private final boolean notifyRelays;
    /** {@code System.nanoTime()} of the last wake-up this outbox sent, spacing them {@link #NOTIFY_SPACING} apart. */
    private final AtomicLong lastNotify = new AtomicLong(System.nanoTime() - NOTIFY_SPACING.toNanos());

    OutboxImpl(Outbox.Builder b) {
        this.tables = b.tables;
        this.notifyRelays = b.notifyRelays;
        this.maxRecordBytes = b.maxRecordBytes;
        this.captured = b.captured;
        this.store = new ByDialect<>(dialect -> OutboxStore.of(tables, dialect));
    }

    @Override
    public boolean send(Connection tx, OutboxMessage sent) {
        Args.notNull(tx, "tx");
        OutboxMessage message = Args.notNull(sent, "message").withTraceContext(tracing.current());
        checkSize(message);
        boolean capture = checkCapture(message);
        Transactions.requireTransaction(tx, "outbox send of " + message.stepKey());
        try {
            OutboxStore s = store.on(tx);
            boolean emitted = capture ? s.insertAllCaptured(tx, List.of(message))[0] : s.insert(tx, message);
            if (!emitted && log.isDebugEnabled()) {
                log.debug("{} - step already in outbox, not sent again", message.stepKey());
            }
            if (!capture) {
                if (emitted) {
                    notifyRelays(s, tx);
                }
                fire();
            }
            return emitted;
        } catch (SQLException e) {
            throw MissingTables.translate("outbox send of " + message.stepKey(), e, tables);
        }
    }

    @Override
    public List<Boolean> sendAll(Connection tx, List<OutboxMessage> messages) {
        Args.notNull(tx, "tx");
        Args.notNull(messages, "messages");
        Map<String, String> context = tracing.current();
        List<OutboxMessage> traced = new ArrayList<>(messages.size());
        boolean anyCaptured = false;
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = checkSize(Args.notNull(messages.get(i), "messages[" + i + "]").withTraceContext(context));
            anyCaptured |= checkCapture(m);
            traced.add(m);
        }
        Transactions.requireTransaction(tx, "outbox sendAll");
        if (messages.isEmpty()) {
            return List.of();
        }
        try {
            OutboxStore s = store.on(tx);
            boolean[] inserted = anyCaptured ? insertSplit(s, tx, traced) : s.insertAll(tx, traced);
            List<Boolean> emitted = new ArrayList<>(inserted.length);
            boolean relayed = false;
            for (int i = 0; i < inserted.length; i++) {
                emitted.add(inserted[i]);
                relayed |= inserted[i] && !isCaptured(traced.get(i).destination());
            }
            if (relayed) {
                notifyRelays(s, tx);
            }
            fire();
            return emitted;
        } catch (SQLException e) {
            throw MissingTables.translate("outbox sendAll of " + messages.size() + " messages", e, tables);
        }
    }

    /**
     * The polled messages in one batch and the captured ones in another ({@link
     * OutboxStore#insertAllCaptured}); each destination keeps its messages' order.
     */
    private boolean[] insertSplit(OutboxStore s, Connection tx, List<OutboxMessage> messages) throws SQLException {
        List<OutboxMessage> polled = new ArrayList<>();
        List<OutboxMessage> capturedOnes = new ArrayList<>();
        for (OutboxMessage m : messages) {
            (isCaptured(m.destination()) ? capturedOnes : polled).add(m);
        }
        boolean[] fromPolled = polled.isEmpty() ? new boolean[0] : s.insertAll(tx, polled);
        boolean[] fromCaptured = s.insertAllCaptured(tx, capturedOnes);
        boolean[] inserted = new boolean[messages.size()];
        int p = 0;
        int c = 0;
        for (int i = 0; i < inserted.length; i++) {
            inserted[i] = isCaptured(messages.get(i).destination()) ? fromCaptured[c++] : fromPolled[p++];
        }
        return inserted;
    }

    private boolean isCaptured(String destination) {
        return captured == null || captured.contains(destination);
    }

    /**
     * Whether {@code m} goes out through change data capture; refuses a delayed one, which the
     * connector would publish at commit, before its time.
     */
    private boolean checkCapture(OutboxMessage m) {
        if (!isCaptured(m.destination())) {
            return false;
        }
        if (m.availableAt() != null || !m.delay().isZero()) {
            throw new InvalidInputException("message " + m.stepKey() + " to destination " + m.destination()
                    + " has a " + (m.availableAt() != null ? "due time (availableAt " + m.availableAt() + ")"
                            : "delay of " + m.delay())
                    + ", but that destination is in change-data-capture mode, whose connector publishes every"
                    + " row at commit: send it without a delay, or leave the destination to a relay"
                    + " (Outbox.Builder.changeDataCapture(destinations) without it)");
        }
        return true;
    }

    @Override
    public TxboxTables tables() {
        return tables;
    }

    @Override
    public AutoCloseable onSend(Runnable listener) {
        listeners.add(Args.notNull(listener, "listener"));
        return () -> listeners.remove(listener);
    }

    /**
     * Wakes the listening relays at commit, at most once per {@link #NOTIFY_SPACING} per outbox:
     * PostgreSQL serializes the commits of notifying transactions, so a notify per transaction
     * would cap the senders' commit rate. The rows sent in between are found by the relay, which
     * looks again within milliseconds after a wake-up or a batch that found rows.
     */
    private void notifyRelays(OutboxStore s, Connection tx) throws SQLException {
        long last = lastNotify.get();
        long now = System.nanoTime();
        if (notifyRelays && now - last >= NOTIFY_SPACING.toNanos() && lastNotify.compareAndSet(last, now)) {
            s.wakeRelays(tx);
        }
    }

    private void fire() {
        for (Runnable l : listeners) {
            try {
                l.run();
            } catch (RuntimeException e) {
                log.warn("outbox send listener failed", e);
            }
        }
    }

    private OutboxMessage checkSize(OutboxMessage m) {
        if (m.recordBytes() > maxRecordBytes) {
            throw new InvalidInputException("message " + m.stepKey() + " is " + m.recordBytes()
                    + " bytes as Kafka counts its record (payload of " + m.payload().length
                    + " bytes, plus routing key, headers and record overhead), over the outbox cap of "
                    + maxRecordBytes + " bytes (maxRecordBytes)");
        }
        return m;
    }
}
