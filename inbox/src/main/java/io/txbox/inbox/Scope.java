package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.internal.KeyLogs;
import org.jspecify.annotations.Nullable;

/**
 * Where an entry lives: the consumer column carries the tenant as {@code consumer@tenant}.
 * Unambiguous because a consumer name cannot contain {@code @}.
 */
record Scope(String column, String key, @Nullable String tenant, KeyLogs keyLogs) {
    /** The key (and tenant) as log lines and messages show it: quoted, or hashed under {@code hashKeysInLogs}. */
    String label() {
        return keyLogs.show(key) + (tenant == null ? "" : " (tenant " + Texts.quote(tenant) + ")");
    }
}
