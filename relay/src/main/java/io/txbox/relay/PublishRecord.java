package io.txbox.relay;

import io.txbox.internal.Args;
import io.txbox.outbox.OutboxMessage;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One outbox row as handed to a {@link Publisher}. Immutable apart from the payload array,
 * which is shared and must not be modified.
 *
 * @param id the row's outbox id
 * @param stepKey the idempotency key of the step ({@code original:step})
 * @param originalKey the saga's original key
 * @param destination the logical destination the row was sent to
 * @param routingKey Kafka record key / RabbitMQ routing key; may be null
 * @param payload the message body
 * @param userHeaders headers set by the sender, in insertion order
 * @param contentType MIME type of the payload, if set
 * @param traceparent W3C trace context, if set
 * @param tracestate W3C trace state, if set
 * @param attempts failed publish attempts so far (0 on the first try)
 * @param createdAt when the row was written, by the database clock
 */
public record PublishRecord(
        long id,
        String stepKey,
        String originalKey,
        String destination,
        @Nullable String routingKey,
        byte[] payload,
        Map<String, String> userHeaders,
        @Nullable String contentType,
        @Nullable String traceparent,
        @Nullable String tracestate,
        int attempts,
        Instant createdAt) {

    public PublishRecord {
        Args.notNull(stepKey, "stepKey");
        Args.notNull(originalKey, "originalKey");
        Args.notNull(destination, "destination");
        Args.notNull(payload, "payload");
        Args.notNull(createdAt, "createdAt");
        // most rows have no user headers: no copy for those
        userHeaders = Args.notNull(userHeaders, "userHeaders").isEmpty() ? Map.of()
                : Collections.unmodifiableMap(new LinkedHashMap<>(userHeaders));
    }

    /**
     * Every header a published message carries, in this order: {@value
     * OutboxMessage#IDEMPOTENCY_KEY_HEADER} (the step key), {@value
     * OutboxMessage#ORIGINAL_KEY_HEADER}, {@value OutboxMessage#CONTENT_TYPE_HEADER},
     * {@value OutboxMessage#TRACEPARENT_HEADER} and {@value OutboxMessage#TRACESTATE_HEADER} when
     * present, then the user headers. Both publishers use this, so they carry the same set.
     */
    public Map<String, String> headers() {
        Map<String, String> all = new LinkedHashMap<>(userHeaders.size() + 5);
        all.put(OutboxMessage.IDEMPOTENCY_KEY_HEADER, stepKey);
        all.put(OutboxMessage.ORIGINAL_KEY_HEADER, originalKey);
        if (contentType != null) {
            all.put(OutboxMessage.CONTENT_TYPE_HEADER, contentType);
        }
        if (traceparent != null) {
            all.put(OutboxMessage.TRACEPARENT_HEADER, traceparent);
        }
        if (tracestate != null) {
            all.put(OutboxMessage.TRACESTATE_HEADER, tracestate);
        }
        all.putAll(userHeaders);
        return all;
    }

    @Override
    public String toString() {
        // never the payload or header values: they may carry personal data
        return "PublishRecord[id=" + id + ", stepKey=" + stepKey + ", destination=" + destination
                + ", " + payload.length + " bytes, attempts=" + attempts + "]";
    }
}
