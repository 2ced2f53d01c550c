package io.txbox.relay;

import java.time.Duration;

/**
 * Callbacks about what the relay did, for metrics or logs; every method has a no-op default.
 * Called on relay threads after the database transaction committed (so counts are final);
 * keep them fast and never throw (an exception is logged and ignored).
 *
 * <p>{@code io.txbox.relay.micrometer.RelayMetrics} implements this on Micrometer.
 */
public interface RelayListener {
    /** No-op listener; the default. */
    RelayListener NONE = new RelayListener() {};

    /**
     * {@code count} rows to {@code destination} were confirmed by the broker and deleted.
     *
     * @param latency from the first send of the batch to the last confirmation
     */
    default void published(String destination, String broker, int count, Duration latency) {}

    /** {@code count} rows failed and will be retried after a backoff. */
    default void failed(String destination, String broker, int count) {}

    /** {@code count} rows were moved to the dead-letter table. {@code broker} is {@code none} for an unknown destination. */
    default void deadLettered(String destination, String broker, int count) {}

    /**
     * The outbox backlog, sampled every backlog interval on a thread of its own. The sample costs
     * the same at any backlog size: it is exact up to 10,000 rows; above that, {@code rows} is
     * the span of ids waiting ({@code max(id) - min(id) + 1}), an upper bound that also counts
     * ids already published out of order or never committed.
     *
     * @param rows rows waiting in the outbox, including delayed and backing-off ones (see above)
     * @param oldestAge age of the row with the lowest id by the database clock; zero when empty
     */
    default void backlog(long rows, Duration oldestAge) {}

    /**
     * The parked routing keys (keys whose dead-lettered row holds back their later rows until an
     * operator acts, see {@link DeadLetters}), sampled with the backlog.
     *
     * @param keys parked keys
     * @param oldestAge how long the longest-parked key has been parked, by the database clock; zero when none is
     */
    default void parkedKeys(long keys, Duration oldestAge) {}
}
