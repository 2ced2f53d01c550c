package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.Resolution;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.internal.Args;

/**
 * What the Kafka and RabbitMQ runners share, so that they only make the broker calls: the
 * {@link DeliveryProcessor}, the running flag, the parked keys' operator calls and the thread
 * that carries out the resolutions operators request.
 */
public abstract class ConsumerRunner implements InboxConsumer {
    protected final DeliveryProcessor processor;
    /** The processor's listener; exceptions it throws are logged and swallowed. */
    protected final ConsumerListener listener;
    /** Whether the runner consumes; set by the subclass's lifecycle. */
    protected volatile boolean running;

    protected ConsumerRunner(DeliveryProcessor processor) {
        this.processor = processor;
        this.listener = processor.listener();
    }

    /** Starts carrying out requested resolutions of parked keys, if this consumer parks keys; once consuming. */
    protected final void startParked() {
        Parking parking = processor.parking();
        if (parking != null) {
            parking.start(listener);
        }
    }

    /** Stops what {@link #startParked} started; on close. */
    protected final void stopParked() {
        Parking parking = processor.parking();
        if (parking != null) {
            parking.stop();
        }
    }

    /** The refusal of a second {@link #start()}. */
    protected final IllegalStateException alreadyStarted() {
        return new IllegalStateException("[" + consumer() + "] already started");
    }

    @Override
    public final boolean isRunning() {
        return running;
    }

    @Override
    public final String consumer() {
        return processor.consumer();
    }

    @Override
    public final ParkedKeys parkedKeys() {
        return processor.parked().keys();
    }

    @Override
    public final Resolution retryParked(String orderingKey) {
        Args.notNull(orderingKey, "orderingKey");
        return processor.parked().resolve(orderingKey, false);
    }

    @Override
    public final Resolution skipParked(String orderingKey) {
        Args.notNull(orderingKey, "orderingKey");
        return processor.parked().resolve(orderingKey, true);
    }
}
