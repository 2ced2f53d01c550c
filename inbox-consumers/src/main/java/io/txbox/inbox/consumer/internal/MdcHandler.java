package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import java.sql.Connection;
import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/**
 * Runs the user's handler with the MDC keys {@value #CONSUMER} and {@value #KEY} set, and puts
 * back whatever they held before once it returns or throws. Wraps both kinds of handler: the
 * one inside the inbox's transaction and the two-phase one.
 */
final class MdcHandler implements Handler, TwoPhaseHandler {
    static final String CONSUMER = "txbox.consumer";
    static final String KEY = "txbox.key";

    private final @Nullable Handler inTransaction;
    private final @Nullable TwoPhaseHandler twoPhase;
    private final String consumer;
    private final KeyLogs keyLogs;

    MdcHandler(Handler delegate, String consumer, KeyLogs keyLogs) {
        this(delegate, null, consumer, keyLogs);
    }

    MdcHandler(TwoPhaseHandler delegate, String consumer, KeyLogs keyLogs) {
        this(null, delegate, consumer, keyLogs);
    }

    private MdcHandler(@Nullable Handler inTransaction, @Nullable TwoPhaseHandler twoPhase, String consumer,
            KeyLogs keyLogs) {
        this.inTransaction = inTransaction;
        this.twoPhase = twoPhase;
        this.consumer = consumer;
        this.keyLogs = keyLogs;
    }

    @Override
    public byte @Nullable [] handle(Connection tx, InboundMessage message) throws Exception {
        return run(message, () -> require(inTransaction).handle(tx, message));
    }

    @Override
    public byte @Nullable [] handle(InboundMessage message) throws Exception {
        return run(message, () -> require(twoPhase).handle(message));
    }

    private interface Call {
        byte @Nullable [] call() throws Exception;
    }

    private byte @Nullable [] run(InboundMessage message, Call call) throws Exception {
        String previousConsumer = MDC.get(CONSUMER);
        String previousKey = MDC.get(KEY);
        MDC.put(CONSUMER, consumer);
        MDC.put(KEY, keyLogs.mdc(message.key()));
        try {
            return call.call();
        } finally {
            restore(CONSUMER, previousConsumer);
            restore(KEY, previousKey);
        }
    }

    private static <T> T require(@Nullable T delegate) {
        if (delegate == null) {
            throw new IllegalStateException("this handler wraps the other kind of handler");
        }
        return delegate;
    }

    private static void restore(String name, @Nullable String previous) {
        if (previous == null) {
            MDC.remove(name);
        } else {
            MDC.put(name, previous);
        }
    }
}
