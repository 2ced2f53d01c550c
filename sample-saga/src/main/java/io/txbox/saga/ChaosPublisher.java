package io.txbox.saga;

import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A relay publisher that publishes a fraction of the records twice, as a broker or a producer
 * retry would. The receiving inbox must absorb the copy. Both copies must be confirmed before
 * the relay deletes the row.
 */
final class ChaosPublisher implements Publisher {
    private final Publisher delegate;
    private final double rate;
    private final AtomicLong copies;

    private ChaosPublisher(Publisher delegate, double rate, AtomicLong copies) {
        this.delegate = delegate;
        this.rate = rate;
        this.copies = copies;
    }

    /** {@code publisher} wrapped; {@code publisher} itself when {@code rate} is 0. */
    static Publisher wrap(Publisher publisher, double rate, AtomicLong copies) {
        return rate <= 0 ? publisher : new ChaosPublisher(publisher, rate, copies);
    }

    @Override
    public String broker() {
        return delegate.broker();
    }

    @Override
    public CompletionStage<Void> publish(String target, PublishRecord record) {
        CompletionStage<Void> first = delegate.publish(target, record);
        if (ThreadLocalRandom.current().nextDouble() >= rate) {
            return first;
        }
        copies.incrementAndGet();
        CompletionStage<Void> copy = delegate.publish(target, record);
        return first.thenCombine(copy, (a, b) -> null);
    }

    @Override
    public void endOfBatch() {
        delegate.endOfBatch();
    }

    @Override
    public void check(Duration timeout) {
        delegate.check(timeout);
    }

    @Override
    public void close() {
        delegate.close();
    }
}
