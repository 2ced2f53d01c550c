package io.txbox.inbox.consumer;

import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import java.sql.Connection;
import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/**
 * Runs the user's handler with the MDC keys {@value #CONSUMER} and {@value #KEY} set, and puts
 * back whatever they held before once it returns or throws.
 */
final class MdcHandler implements Handler {
    static final String CONSUMER = "txbox.consumer";
    static final String KEY = "txbox.key";

    private final Handler delegate;
    private final String consumer;
    private final KeyLogs keyLogs;

    MdcHandler(Handler delegate, String consumer, KeyLogs keyLogs) {
        this.delegate = delegate;
        this.consumer = consumer;
        this.keyLogs = keyLogs;
    }

    @Override
    public byte @Nullable [] handle(Connection tx, InboundMessage message) throws Exception {
        String previousConsumer = MDC.get(CONSUMER);
        String previousKey = MDC.get(KEY);
        MDC.put(CONSUMER, consumer);
        MDC.put(KEY, keyLogs.mdc(message.key()));
        try {
            return delegate.handle(tx, message);
        } finally {
            restore(CONSUMER, previousConsumer);
            restore(KEY, previousKey);
        }
    }

    private static void restore(String name, @Nullable String previous) {
        if (previous == null) {
            MDC.remove(name);
        } else {
            MDC.put(name, previous);
        }
    }
}
