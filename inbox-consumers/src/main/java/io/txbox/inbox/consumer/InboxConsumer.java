package io.txbox.inbox.consumer;

import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.Resolution;

/**
 * A running broker consumer that feeds each delivery through an inbox and a handler, and acks
 * it (or commits its offset) only after the database transaction committed.
 *
 * <p>Built by {@code KafkaInboxConsumer.builder(..)} or {@code RabbitInboxConsumer.builder(..)}.
 * Thread-safe.
 */
public interface InboxConsumer extends AutoCloseable {
    /**
     * Starts consuming on threads named after the consumer and returns at once.
     *
     * @throws IllegalStateException if already started or closed
     */
    void start();

    /**
     * Stops gracefully: stops fetching, lets the delivery in progress finish and acks it (or
     * commits its offset), leaves everything else unacked for redelivery, and closes the broker
     * connection. Waits at most the configured shutdown timeout plus the broker's own close.
     * Idempotent.
     */
    @Override
    void close();

    /** {@code true} between {@link #start()} and {@link #close()}, unless the consumer failed for good. */
    boolean isRunning();

    /** The inbox consumer name. */
    String consumer();

    /**
     * This consumer's parked ordering keys (built with {@code parkKeys(true)}), to list them and
     * read their metrics.
     *
     * @throws io.txbox.ConfigException if this consumer does not park keys
     */
    ParkedKeys parkedKeys();

    /**
     * Runs the dead message of a parked ordering key again, then the key's other parked messages
     * in order, each exactly once through this consumer's handler, as a delivery runs (in the
     * caller's thread, possibly while the consumer runs deliveries of other keys: the handler
     * must be thread-safe). Stops at a message that fails again, which then holds the key.
     *
     * @throws io.txbox.ConfigException if this consumer does not park keys
     */
    Resolution retryParked(String orderingKey);

    /**
     * Drops the dead message of a parked ordering key for good (a redelivery of it is a
     * duplicate), then runs the key's other parked messages as {@link #retryParked} does.
     *
     * @throws io.txbox.ConfigException if this consumer does not park keys
     */
    Resolution skipParked(String orderingKey);
}
