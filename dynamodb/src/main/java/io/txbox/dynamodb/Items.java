package io.txbox.dynamodb;

import io.txbox.internal.KeyRules;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The item layout. {@code pk} is {@code <consumer>|k|<key>}, or {@code <consumer>|t<n>|<tenant><key>}
 * with a tenant of {@code n} characters: no two (consumer, tenant, key) share one, since a
 * consumer name cannot contain {@code |}. The other attributes: {@code st} state (P processing,
 * C completed, F failed or released, D dead), {@code fp} fingerprint (absent for none),
 * {@code at} attempts, {@code tk} fencing token (grows with every acquisition), {@code lu} lease
 * end in epoch milliseconds (while P), {@code res} result, {@code rs} result status, {@code hd}
 * headers, {@code err} last error, {@code ra} first claim in epoch milliseconds, {@code con},
 * {@code mk} and {@code tn} consumer, key and tenant (for listing), and the TTL attribute.
 */
final class Items {
    static final String PK = DynamoStore.KEY_ATTRIBUTE;
    static final String STATE = "st";
    static final String FINGERPRINT = "fp";
    static final String ATTEMPTS = "at";
    static final String TOKEN = "tk";
    static final String LEASE_UNTIL = "lu";
    static final String RESULT = "res";
    static final String RESULT_STATUS = "rs";
    static final String HEADERS = "hd";
    static final String ERROR = "err";
    static final String RECEIVED_AT = "ra";
    static final String CONSUMER = "con";
    static final String KEY = "mk";
    static final String TENANT = "tn";
    static final String EXPIRES = DynamoStore.TTL_ATTRIBUTE;

    static final String PROCESSING = "P";
    static final String COMPLETED = "C";
    static final String FAILED = "F";
    static final String DEAD = "D";

    /** DynamoDB counts a number as at most 21 bytes. */
    private static final int NUMBER_BYTES = 21;

    private Items() {}

    /** Checks key and tenant by the inbox's rules and returns the item's partition key. */
    static String pk(String consumer, String key, @Nullable String tenant) {
        KeyRules.check("message key", key);
        if (tenant != null) {
            KeyRules.check("tenant", tenant);
        }
        return consumer + (tenant == null ? "|k|" : "|t" + tenant.length() + "|" + tenant) + key;
    }

    static AttributeValue s(String v) {
        return AttributeValue.builder().s(v).build();
    }

    static AttributeValue n(long v) {
        return AttributeValue.builder().n(Long.toString(v)).build();
    }

    static AttributeValue b(byte[] v) {
        return AttributeValue.builder().b(SdkBytes.fromByteArray(v)).build();
    }

    static @Nullable String string(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        return v == null ? null : v.s();
    }

    static long number(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        return v == null || v.n() == null ? 0 : Long.parseLong(v.n());
    }

    static byte @Nullable [] bytes(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        return v == null || v.b() == null ? null : v.b().asByteArray();
    }

    /**
     * An upper bound of the size DynamoDB counts for a completed item: attribute names plus
     * values (UTF-8 for strings, raw for binary, 21 per number).
     */
    static long completedSize(String pk, String consumer, String key, @Nullable String tenant, int fingerprintBytes,
            int resultBytes, int headerBytes) {
        long size = utf8(PK) + utf8(pk)
                + utf8(STATE) + 1
                + utf8(FINGERPRINT) + fingerprintBytes
                + utf8(ATTEMPTS) + NUMBER_BYTES + utf8(TOKEN) + NUMBER_BYTES + utf8(RECEIVED_AT) + NUMBER_BYTES
                + utf8(EXPIRES) + NUMBER_BYTES + utf8(RESULT_STATUS) + NUMBER_BYTES
                + utf8(RESULT) + resultBytes + utf8(HEADERS) + headerBytes
                + utf8(CONSUMER) + utf8(consumer) + utf8(KEY) + utf8(key);
        if (tenant != null) {
            size += utf8(TENANT) + utf8(tenant);
        }
        return size;
    }

    private static int utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
