package io.txbox.redis;

/**
 * Hears what the Redis fast path of a {@link HybridInbox} did, for metrics. Implementations
 * must be fast and thread-safe; an exception they throw is logged and otherwise ignored. Every
 * method does nothing by default.
 */
public interface RedisListener {
    /** No-op listener, the default. */
    RedisListener NONE = new RedisListener() {};

    /** How the fast path answered one delivery. */
    enum Answer {
        /** A completed result was found in Redis and replayed; the database was not touched. */
        HIT,
        /** Another delivery of the key was in flight; answered IN_FLIGHT without touching the database. */
        IN_FLIGHT,
        /** Redis knew nothing usable (or the fingerprint differed): the delivery went to the database. */
        MISS,
        /** The circuit breaker is open: Redis was not asked, the delivery went to the database. */
        SKIPPED,
        /** Redis failed or timed out on this delivery: it went to the database. */
        ERROR
    }

    /** One delivery went through the fast path with {@code answer}. */
    default void onAnswer(String consumer, Answer answer) {}

    /** The circuit breaker moved from {@code from} to {@code to}. */
    default void onBreakerState(String consumer, BreakerState from, BreakerState to) {}
}
