package io.txbox.inbox.consumer.internal;

import io.txbox.internal.Args;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One message as a broker delivered it, before the inbox has looked at it. Built by a broker
 * adapter and handed to {@link DeliveryProcessor#process(Delivery)}.
 *
 * <p>Arrays are not copied. {@link #toString()} never shows the payload.
 *
 * @param coordinates where the delivery came from, for logs: {@code topic-partition@offset}, or
 *     the queue and delivery tag
 * @param transportKey the key {@link io.txbox.inbox.consumer.KeyPolicy#TRANSPORT_COORDINATES} uses, or {@code null} when
 *     the transport has no stable coordinates
 * @param key the raw bytes of the idempotency-key header, or {@code null} when it is absent
 * @param payload the message body; {@code null} (a Kafka tombstone) becomes empty
 * @param headers the other headers as text, handed to the handler (trace context included);
 *     {@code null} becomes empty
 * @param redelivered whether the broker flagged the delivery as a redelivery
 * @param orderingKey the raw bytes of the ordering key (the Kafka record key, the RabbitMQ
 *     routing key or the header named for it), or {@code null} when it has none
 */
public record Delivery(
        String coordinates,
        @Nullable String transportKey,
        byte @Nullable [] key,
        byte[] payload,
        Map<String, String> headers,
        boolean redelivered,
        byte @Nullable [] orderingKey) {

    /** A delivery without an ordering key. */
    public Delivery(String coordinates, @Nullable String transportKey, byte @Nullable [] key,
            byte @Nullable [] payload, @Nullable Map<String, String> headers, boolean redelivered) {
        this(coordinates, transportKey, key, payload, headers, redelivered, null);
    }

    /**
     * @throws io.txbox.InvalidInputException if {@code coordinates} is null
     */
    public Delivery(String coordinates, @Nullable String transportKey, byte @Nullable [] key,
            byte @Nullable [] payload, @Nullable Map<String, String> headers, boolean redelivered,
            byte @Nullable [] orderingKey) {
        this.coordinates = Args.notNull(coordinates, "coordinates");
        this.transportKey = transportKey;
        this.key = key;
        this.payload = payload == null ? new byte[0] : payload;
        this.headers = headers == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        this.redelivered = redelivered;
        this.orderingKey = orderingKey;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Delivery d && coordinates.equals(d.coordinates)
                && Objects.equals(transportKey, d.transportKey) && java.util.Arrays.equals(key, d.key)
                && java.util.Arrays.equals(payload, d.payload) && headers.equals(d.headers)
                && redelivered == d.redelivered && java.util.Arrays.equals(orderingKey, d.orderingKey);
    }

    @Override
    public int hashCode() {
        return Objects.hash(coordinates, transportKey, java.util.Arrays.hashCode(key),
                java.util.Arrays.hashCode(payload), headers, redelivered);
    }

    @Override
    public String toString() {
        return "Delivery[" + coordinates + ", payload=" + payload.length + " bytes, headers=" + headers.keySet()
                + (redelivered ? ", redelivered" : "") + "]";
    }
}
