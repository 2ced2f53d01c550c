package io.txbox.inbox.consumer;

/** What a consumer does with a delivery whose idempotency key header is missing or malformed. */
public enum KeyPolicy {
    /**
     * Dead-letter the delivery with the reason (missing header, empty, too long, control
     * characters, not UTF-8) and ack it. The default: a message without a usable key cannot
     * be deduplicated, so it is parked for a human rather than processed.
     */
    DEAD_LETTER,

    /**
     * Use the delivery's transport coordinates as the key, for Kafka {@code topic-partition-offset}.
     * This deduplicates broker redeliveries (a crash before the offset commit, a rebalance) but
     * is tied to the transport: a message that a producer publishes twice gets two offsets and
     * so two keys, and runs twice. Recreating the topic or restoring it elsewhere changes every
     * key. Not available for RabbitMQ, which has no stable delivery coordinates.
     */
    TRANSPORT_COORDINATES
}
