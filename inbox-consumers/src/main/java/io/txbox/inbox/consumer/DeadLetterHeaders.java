package io.txbox.inbox.consumer;

/**
 * Headers the consumers add to a dead-lettered message. The original payload and headers are
 * kept as they were; these say why and where from.
 */
public final class DeadLetterHeaders {
    /** Why the message was dead-lettered, in words: {@value}. */
    public static final String REASON = "txbox-dead-reason";
    /** The inbox consumer name that gave up: {@value}. */
    public static final String CONSUMER = "txbox-consumer";
    /** Kafka: the topic the record was read from: {@value}. */
    public static final String ORIGINAL_TOPIC = "txbox-original-topic";
    /** Kafka: its partition, in decimal: {@value}. */
    public static final String ORIGINAL_PARTITION = "txbox-original-partition";
    /** Kafka: its offset, in decimal: {@value}. */
    public static final String ORIGINAL_OFFSET = "txbox-original-offset";
    /** RabbitMQ: the exchange the message was published to: {@value}. */
    public static final String ORIGINAL_EXCHANGE = "txbox-original-exchange";
    /** RabbitMQ: its routing key: {@value}. */
    public static final String ORIGINAL_ROUTING_KEY = "txbox-original-routing-key";
    /** RabbitMQ: the queue it was consumed from: {@value}. */
    public static final String ORIGINAL_QUEUE = "txbox-original-queue";

    /**
     * Set when the dead-letter destination refused the original payload as too large: the dead
     * letter then carries headers and reason only, and this header the payload's size in bytes
     * (the original stays readable at its topic/offset until retention removes it): {@value}.
     */
    public static final String PAYLOAD_OMITTED = "txbox-payload-omitted";

    private DeadLetterHeaders() {}
}
