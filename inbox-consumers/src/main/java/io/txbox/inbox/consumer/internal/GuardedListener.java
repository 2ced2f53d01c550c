package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Outcome;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.consumer.ConsumerListener;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Shields the consumer from a listener that throws. */
final class GuardedListener implements ConsumerListener {
    private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final ConsumerListener delegate;

    GuardedListener(ConsumerListener delegate) {
        this.delegate = delegate;
    }

    @Override
    public void onOutcome(String consumer, Outcome.Status status, Duration took) {
        run(consumer, () -> delegate.onOutcome(consumer, status, took));
    }

    @Override
    public void onRetry(String consumer, Duration delay, String reason) {
        run(consumer, () -> delegate.onRetry(consumer, delay, reason));
    }

    @Override
    public void onDeadLetter(String consumer, String reason) {
        run(consumer, () -> delegate.onDeadLetter(consumer, reason));
    }

    @Override
    public void onAck(String consumer, int count) {
        run(consumer, () -> delegate.onAck(consumer, count));
    }

    @Override
    public void onError(String consumer, Throwable error) {
        run(consumer, () -> delegate.onError(consumer, error));
    }

    @Override
    public void onParked(String consumer, ParkedKeys.Stats stats) {
        run(consumer, () -> delegate.onParked(consumer, stats));
    }

    private static void run(String consumer, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            log.warn("{} - consumer listener threw, ignored", consumer, e);
        }
    }
}
