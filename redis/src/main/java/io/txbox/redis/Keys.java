package io.txbox.redis;

import io.txbox.Texts;
import io.txbox.internal.KeyRules;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Redis key layout and the encodings shared by the hybrid inbox and the Redis store.
 *
 * <p>No two (kind, consumer, tenant, key) share a Redis key, whatever characters they hold:
 * a consumer name cannot contain {@code |}, and the tenant's length is spelled out.
 */
final class Keys {
    /** Default key prefix. */
    static final String DEFAULT_PREFIX = "txbox:";
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9._:/{}-]{0,64}");

    private Keys() {}

    static String checkPrefix(String prefix) {
        if (prefix == null || !PREFIX.matcher(prefix).matches()) {
            throw new io.txbox.ConfigException("keyPrefix must be 0 to 64 characters from A-Z a-z 0-9 . _ : / { } -,"
                    + " but was " + Texts.quote(prefix));
        }
        return prefix;
    }

    /** Namespace of the Redis store's entries. */
    static final String STORE = "store|";
    /** Namespace of the hybrid inbox's cache entries and in-flight markers. */
    static final String CACHE = "cache|";

    /**
     * Checks key and tenant by the inbox's rules and returns the entry's Redis key:
     * {@code <prefix><kind><consumer>|k|<key>}, or {@code <prefix><kind><consumer>|t<n>|<tenant><key>}
     * with a tenant of {@code n} characters.
     */
    static byte[] entry(String prefix, String kind, String consumer, String key, @Nullable String tenant) {
        KeyRules.check("message key", key);
        if (tenant != null) {
            KeyRules.check("tenant", tenant);
        }
        String scope = tenant == null ? "|k|" : "|t" + tenant.length() + "|" + tenant;
        return (prefix + kind + consumer + scope + key).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] bytes(@Nullable Object reply) {
        return reply instanceof byte[] b ? b : new byte[0];
    }

    static String text(@Nullable Object reply) {
        return new String(bytes(reply), StandardCharsets.UTF_8);
    }

    static long number(@Nullable Object reply) {
        if (reply instanceof Long l) {
            return l;
        }
        return Long.parseLong(text(reply));
    }
}
