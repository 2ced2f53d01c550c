package io.txbox.inbox.consumer;

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
}
