package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import io.txbox.internal.KeyLogs;
import io.txbox.internal.Tracing;
import java.sql.Connection;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/**
 * Runs the user's handler with the MDC keys {@value #CONSUMER} and {@value #KEY} set, and puts
 * back whatever they held before once it returns or throws; with tracing, inside a consumer span
 * whose parent is the delivery's trace context. Wraps both kinds of handler: the one inside the
 * inbox's transaction and the two-phase one.
 */
final class MdcHandler implements Handler, TwoPhaseHandler {
    static final String CONSUMER = "txbox.consumer";
    static final String KEY = "txbox.key";

    private final @Nullable Handler inTransaction;
    private final @Nullable TwoPhaseHandler twoPhase;
    private final String consumer;
    private final KeyLogs keyLogs;
    private final Tracing tracing;
    private final String spanName;

    MdcHandler(Handler delegate, String consumer, KeyLogs keyLogs, Tracing tracing) {
        this(delegate, null, consumer, keyLogs, tracing);
    }

    MdcHandler(TwoPhaseHandler delegate, String consumer, KeyLogs keyLogs, Tracing tracing) {
        this(null, delegate, consumer, keyLogs, tracing);
    }

    private MdcHandler(@Nullable Handler inTransaction, @Nullable TwoPhaseHandler twoPhase, String consumer,
            KeyLogs keyLogs, Tracing tracing) {
        this.inTransaction = inTransaction;
        this.twoPhase = twoPhase;
        this.consumer = consumer;
        this.keyLogs = keyLogs;
        this.tracing = tracing;
        this.spanName = "process " + consumer;
    }

    @Override
    public byte @Nullable [] handle(Connection tx, InboundMessage message) throws Exception {
        return run(message, () -> require(inTransaction).handle(tx, message));
    }

    @Override
    public byte @Nullable [] handle(InboundMessage message) throws Exception {
        return run(message, () -> require(twoPhase).handle(message));
    }

    private byte @Nullable [] run(InboundMessage message, Tracing.Work<byte @Nullable [], Exception> call) throws Exception {
        String previousConsumer = MDC.get(CONSUMER);
        String previousKey = MDC.get(KEY);
        String key = keyLogs.mdc(message.key());
        MDC.put(CONSUMER, consumer);
        MDC.put(KEY, key);
        try {
            return tracing.inSpan(Tracing.Kind.CONSUMER, spanName, message::header,
                    Map.of(CONSUMER, consumer, KEY, key), result -> false, call);
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
