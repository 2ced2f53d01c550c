package io.txbox.outbox;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Counts a message's record the way the Kafka producer does before it checks
 * {@code max.request.size}: the upper bound of a record batch (format v2) holding only this
 * record. Written out here because the outbox does not depend on kafka-clients; the relay's
 * tests compare it with the producer's own estimate.
 */
final class KafkaRecordSize {
    /** A v2 record batch's header: offset, length, epoch, magic, CRC, attributes, ... */
    static final int BATCH_OVERHEAD = 61;
    /** A record's fixed fields at their widest: length, attributes, timestamp and offset deltas. */
    static final int MAX_RECORD_OVERHEAD = 21;
    /** A null key or value is written as the varint -1: one byte. */
    private static final int NULL_VARINT_BYTES = 1;

    private KafkaRecordSize() {}

    static int of(OutboxMessage m) {
        long size = BATCH_OVERHEAD + MAX_RECORD_OVERHEAD;
        size += m.routingKey() == null ? NULL_VARINT_BYTES : bytes(utf8(m.routingKey()));
        size += bytes(m.payload().length);
        // the headers the relay publishes (PublishRecord.headers()), then the user's
        int count = 2;
        size += header(OutboxMessage.IDEMPOTENCY_KEY_HEADER, m.stepKey().value());
        size += header(OutboxMessage.ORIGINAL_KEY_HEADER, m.stepKey().original());
        if (m.contentType() != null) {
            count++;
            size += header(OutboxMessage.CONTENT_TYPE_HEADER, m.contentType());
        }
        if (m.traceparent() != null) {
            count++;
            size += header(OutboxMessage.TRACEPARENT_HEADER, m.traceparent());
        }
        if (m.tracestate() != null) {
            count++;
            size += header(OutboxMessage.TRACESTATE_HEADER, m.tracestate());
        }
        for (Map.Entry<String, String> h : m.headers().entrySet()) {
            count++;
            size += header(h.getKey(), h.getValue());
        }
        size += varint(count);
        return (int) Math.min(size, Integer.MAX_VALUE);
    }

    private static long header(String name, String value) {
        return bytes(utf8(name)) + bytes(utf8(value));
    }

    /** A length-prefixed byte string: the varint of its length, then the bytes. */
    private static long bytes(int length) {
        return varint(length) + (long) length;
    }

    private static int utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    /** Bytes of Kafka's zig-zag varint of {@code value}. */
    static int varint(int value) {
        int v = (value << 1) ^ (value >> 31);
        int n = 1;
        while ((v & 0xffffff80) != 0) {
            n++;
            v >>>= 7;
        }
        return n;
    }
}
