package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.internal.Args;
import io.txbox.internal.KeyRules;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One delivery of a message, as the inbox sees it.
 *
 * <p>The key is checked when the message is used, not here, so that an adapter can build a
 * message from whatever the broker delivered and get one clear {@link io.txbox.InvalidInputException}
 * from the inbox: not null, not empty, at most 255 bytes of UTF-8, no control characters.
 *
 * <p>The payload array is not copied (messages can be large); do not change it afterwards.
 * {@link #toString()} shows its length, never its content.
 *
 * @param key the idempotency key, unique per consumer (and tenant)
 * @param payload the message body; only its fingerprint is stored. {@code null} becomes empty
 * @param headers broker or HTTP headers, exposed to handlers (W3C {@code traceparent} and
 *     {@code tracestate} included); {@code null} becomes empty, entries with a null name or
 *     value are dropped
 * @param tenant an optional tenant: part of the dedup scope, so one key seen by two tenants
 *     makes two entries
 * @param redelivered whether the broker flagged this as a redelivery (informational)
 */
public record InboundMessage(
        String key, byte[] payload, Map<String, String> headers, @Nullable String tenant, boolean redelivered) {

    public InboundMessage {
        payload = payload == null ? new byte[0] : payload;
        headers = copy(headers);
    }

    /** A message with no headers, no tenant. */
    public static InboundMessage of(String key, byte[] payload) {
        return new InboundMessage(key, payload, Map.of(), null, false);
    }

    /**
     * Decodes a key that arrived as bytes (a Kafka record key, an AMQP header), refusing
     * anything that is not valid UTF-8 or breaks the key rules.
     *
     * @throws io.txbox.InvalidInputException naming what is wrong
     */
    public static String keyFromUtf8(byte[] raw) {
        Args.notNull(raw, "raw");
        return KeyRules.decode("message key", raw);
    }

    /** A builder for the other fields. */
    public static Builder builder(String key, byte[] payload) {
        return new Builder(key, payload);
    }

    /** The header's value, or {@code null}. Names are matched exactly. */
    public @Nullable String header(String name) {
        Args.notNull(name, "name");
        return headers.get(name);
    }

    private static Map<String, String> copy(@Nullable Map<String, String> headers) {
        if (headers == null || headers.isEmpty()) {
            return Map.of();
        }
        Map<String, String> copy = new LinkedHashMap<>(headers.size() * 2);
        headers.forEach((k, v) -> {
            if (k != null && v != null) {
                copy.put(k, v);
            }
        });
        return Collections.unmodifiableMap(copy);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof InboundMessage m && key.equals(m.key) && Arrays.equals(payload, m.payload)
                && headers.equals(m.headers) && Objects.equals(tenant, m.tenant) && redelivered == m.redelivered;
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, Arrays.hashCode(payload), headers, tenant, redelivered);
    }

    @Override
    public String toString() {
        return "InboundMessage[key=" + Texts.quote(key) + (tenant == null ? "" : ", tenant=" + Texts.quote(tenant))
                + ", payload=" + payload.length + " bytes, headers=" + headers.keySet()
                + (redelivered ? ", redelivered" : "") + "]";
    }

    /** Builds an {@link InboundMessage}. */
    public static final class Builder {
        private final String key;
        private final byte[] payload;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private @Nullable String tenant;
        private boolean redelivered;

        private Builder(String key, byte[] payload) {
            this.key = key;
            this.payload = payload;
        }

        /** Adds one header, replacing an earlier value of the same name. */
        public Builder header(String name, String value) {
            headers.put(Args.notNull(name, "name"), Args.notNull(value, "value"));
            return this;
        }

        /** Adds all of {@code headers}. */
        public Builder headers(Map<String, String> headers) {
            Args.notNull(headers, "headers").forEach(this::header);
            return this;
        }

        /** The tenant, part of the dedup scope; default none. */
        public Builder tenant(@Nullable String tenant) {
            this.tenant = tenant;
            return this;
        }

        /** Whether the broker flagged a redelivery; default {@code false}. */
        public Builder redelivered(boolean redelivered) {
            this.redelivered = redelivered;
            return this;
        }

        public InboundMessage build() {
            return new InboundMessage(key, payload, headers, tenant, redelivered);
        }
    }
}
