package io.txbox.outbox;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.internal.Args;
import io.txbox.internal.KeyRules;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One outgoing message: what {@link Outbox#send} writes and the relay publishes. Immutable;
 * built with {@link #builder(StepKey, String)}, which checks every field as it is set.
 *
 * <p>The relay adds these headers to every published message, so users may not set them:
 * {@value #IDEMPOTENCY_KEY_HEADER} (the step key), {@value #ORIGINAL_KEY_HEADER},
 * {@value #CONTENT_TYPE_HEADER}, {@value #TRACEPARENT_HEADER} and {@value #TRACESTATE_HEADER}.
 * A RabbitMQ message carries the step key twice, as {@value #IDEMPOTENCY_KEY_HEADER} and as
 * {@code x-idempotency-key} (RabbitMQ's conventional name); consumers may read either, and
 * users may set neither.
 */
public final class OutboxMessage {
    public static final String IDEMPOTENCY_KEY_HEADER = "idempotency-key";
    public static final String ORIGINAL_KEY_HEADER = "txbox-original-key";
    public static final String CONTENT_TYPE_HEADER = "content-type";
    public static final String TRACEPARENT_HEADER = "traceparent";
    public static final String TRACESTATE_HEADER = "tracestate";
    /** Longest destination, routing key, content type or header name, in bytes of UTF-8. */
    public static final int MAX_NAME_BYTES = 255;
    /** Largest total of header names and values, in UTF-16 chars: {@value}. */
    public static final int MAX_HEADERS_CHARS = 64 * 1024;

    private static final String TRACEPARENT_PATTERN = "[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}";
    private static final int MAX_TRACESTATE_CHARS = 512;
    private static final Set<String> RESERVED = Set.of(IDEMPOTENCY_KEY_HEADER, ORIGINAL_KEY_HEADER,
            CONTENT_TYPE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER, "x-idempotency-key");

    private final StepKey stepKey;
    private final String destination;
    private final @Nullable String routingKey;
    private final byte[] payload;
    private final Map<String, String> headers;
    private final @Nullable String contentType;
    private final @Nullable String traceparent;
    private final @Nullable String tracestate;
    private final @Nullable Instant availableAt;
    private final Duration delay;
    private final int recordBytes;

    private OutboxMessage(Builder b) {
        this.stepKey = b.stepKey;
        this.destination = b.destination;
        this.routingKey = b.routingKey;
        this.payload = Objects.requireNonNull(b.payload);
        this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
        this.contentType = b.contentType;
        this.traceparent = b.traceparent;
        this.tracestate = b.tracestate;
        this.availableAt = b.availableAt;
        this.delay = b.delay;
        this.recordBytes = KafkaRecordSize.of(this);
    }

    private OutboxMessage(OutboxMessage m, String traceparent, @Nullable String tracestate) {
        this.stepKey = m.stepKey;
        this.destination = m.destination;
        this.routingKey = m.routingKey;
        this.payload = m.payload;
        this.headers = m.headers;
        this.contentType = m.contentType;
        this.traceparent = traceparent;
        this.tracestate = tracestate;
        this.availableAt = m.availableAt;
        this.delay = m.delay;
        this.recordBytes = KafkaRecordSize.of(this);
    }

    /**
     * This message with the trace context of the sending thread ({@code traceparent} and
     * {@code tracestate} headers), unless it has a traceparent of its own or {@code context}
     * has none. A trace state the builder would refuse is left out rather than failing the send.
     */
    OutboxMessage withTraceContext(Map<String, String> context) {
        String parent = context.get(TRACEPARENT_HEADER);
        if (traceparent != null || parent == null || !parent.matches(TRACEPARENT_PATTERN)) {
            return this;
        }
        String state = context.get(TRACESTATE_HEADER);
        return new OutboxMessage(this, parent, state != null && state.length() <= MAX_TRACESTATE_CHARS ? state : null);
    }

    /**
     * Starts a message for step {@code stepKey} to {@code destination}, the logical name the
     * relay maps to a Kafka topic or a RabbitMQ exchange.
     */
    public static Builder builder(StepKey stepKey, String destination) {
        return new Builder(stepKey, destination);
    }

    public StepKey stepKey() {
        return stepKey;
    }

    public String destination() {
        return destination;
    }

    /** Kafka record key / RabbitMQ routing key; order is kept per routing key. */
    public @Nullable String routingKey() {
        return routingKey;
    }

    /** The payload; the array is shared, not copied: do not modify it. */
    public byte[] payload() {
        return payload;
    }

    /** User headers, in insertion order. */
    public Map<String, String> headers() {
        return headers;
    }

    public @Nullable String contentType() {
        return contentType;
    }

    public @Nullable String traceparent() {
        return traceparent;
    }

    public @Nullable String tracestate() {
        return tracestate;
    }

    /** Absolute earliest publish time, if one was set. */
    public @Nullable Instant availableAt() {
        return availableAt;
    }

    /** Delay after the send statement, measured by the database clock; zero by default. */
    public Duration delay() {
        return delay;
    }

    /**
     * The size Kafka gives this message's record when it checks {@code max.request.size}: the
     * producer's upper-bound estimate of the record batch that carries it, counting the routing
     * key (the record key), the payload, every header the relay publishes ({@value
     * #IDEMPOTENCY_KEY_HEADER}, {@value #ORIGINAL_KEY_HEADER}, the content type and trace
     * context when set, and the user headers), their length prefixes and Kafka's fixed record
     * and batch overhead. {@link Outbox#send} refuses a message whose size is over the outbox's
     * {@code maxRecordBytes}.
     */
    public int recordBytes() {
        return recordBytes;
    }

    @Override
    public String toString() {
        // payload and header values stay out of logs
        return "OutboxMessage[" + stepKey + " -> " + destination + ", " + payload.length + " bytes]";
    }

    /** Builds an {@link OutboxMessage}; each setter rejects a bad value at once. */
    public static final class Builder {
        private final StepKey stepKey;
        private final String destination;
        private @Nullable String routingKey;
        private byte @Nullable [] payload;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private int headerChars;
        private @Nullable String contentType;
        private @Nullable String traceparent;
        private @Nullable String tracestate;
        private @Nullable Instant availableAt;
        private Duration delay = Duration.ZERO;

        private Builder(StepKey stepKey, String destination) {
            this.stepKey = Args.notNull(stepKey, "stepKey");
            this.destination = name("destination", destination);
        }

        public Builder routingKey(@Nullable String routingKey) {
            this.routingKey = routingKey == null ? null : name("routing key", routingKey);
            return this;
        }

        /**
         * The payload bytes (not copied); required: {@link #build()} refuses a message whose
         * payload was never set, so a forgotten payload never goes out as an empty message. For
         * an intentionally empty message pass {@code new byte[0]}. The outbox's size cap is
         * checked at send time.
         */
        public Builder payload(byte[] payload) {
            if (payload == null) {
                throw new InvalidInputException("payload is missing (null) for " + stepKey);
            }
            this.payload = payload;
            return this;
        }

        /** The payload as UTF-8 bytes; {@code ""} for an intentionally empty message. */
        public Builder payload(String payload) {
            if (payload == null) {
                throw new InvalidInputException("payload is missing (null) for " + stepKey);
            }
            return payload(payload.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        public Builder contentType(@Nullable String contentType) {
            this.contentType = contentType == null ? null : name("content type", contentType);
            return this;
        }

        /** A user header. Names are case-insensitive, stored lower-case; values are any valid Unicode without NUL. */
        public Builder header(String name, String value) {
            String n = name("header name", name).toLowerCase(Locale.ROOT);
            if (RESERVED.contains(n)) {
                throw new InvalidInputException("header " + Texts.quote(n) + " is set by txbox itself");
            }
            checkValue("header " + n, value);
            String old = headers.put(n, value);
            headerChars += n.length() + value.length() - (old == null ? 0 : n.length() + old.length());
            if (headerChars > MAX_HEADERS_CHARS) {
                throw new InvalidInputException("headers exceed " + MAX_HEADERS_CHARS + " chars for " + stepKey);
            }
            return this;
        }

        public Builder headers(Map<String, String> headers) {
            Args.notNull(headers, "headers").forEach(this::header);
            return this;
        }

        /** W3C trace context of the sender, carried to the consumer. */
        public Builder traceparent(@Nullable String traceparent) {
            if (traceparent != null && !traceparent.matches(TRACEPARENT_PATTERN)) {
                throw new InvalidInputException("traceparent is not W3C trace context: " + Texts.quote(traceparent));
            }
            this.traceparent = traceparent;
            return this;
        }

        public Builder tracestate(@Nullable String tracestate) {
            if (tracestate != null) {
                checkValue("tracestate", tracestate);
                if (tracestate.length() > MAX_TRACESTATE_CHARS) {
                    throw new InvalidInputException("tracestate is longer than " + MAX_TRACESTATE_CHARS + " chars");
                }
            }
            this.tracestate = tracestate;
            return this;
        }

        /** Publish no earlier than {@code when}. */
        public Builder availableAt(@Nullable Instant when) {
            this.availableAt = when;
            return this;
        }

        /**
         * Publish no earlier than {@code delay} after the send, by the database clock: counted
         * from the send statement ({@code clock_timestamp()}), not from the start of the
         * sending transaction. With {@link #availableAt(Instant)} as well, the message is due at
         * {@code availableAt + delay}.
         */
        public Builder delay(Duration delay) {
            if (delay == null || delay.isNegative()) {
                throw new InvalidInputException("delay must be zero or positive, but was " + delay);
            }
            this.delay = delay;
            return this;
        }

        /**
         * The message.
         *
         * @throws InvalidInputException if {@link #payload(byte[])} was never called
         */
        public OutboxMessage build() {
            if (payload == null) {
                throw new InvalidInputException("payload is not set for " + stepKey + ": call .payload(..) before"
                        + " build(), with new byte[0] for an intentionally empty message");
            }
            return new OutboxMessage(this);
        }

        private static String name(String what, String value) {
            if (value == null || value.isEmpty()) {
                throw new InvalidInputException(what + " is " + (value == null ? "missing (null)" : "empty"));
            }
            return KeyRules.check(what, value);
        }

        private static void checkValue(String what, String value) {
            if (value == null) {
                throw new InvalidInputException(what + " value is missing (null)");
            }
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == 0) {
                    throw new InvalidInputException(what + " value contains NUL at index " + i);
                }
                if (Character.isHighSurrogate(c) && i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                } else if (Character.isSurrogate(c)) {
                    throw new InvalidInputException(what + " value is not valid Unicode (lone surrogate at index " + i + ")");
                }
            }
        }
    }
}
