package io.txbox.inbox;

import io.txbox.Texts;
import org.jspecify.annotations.Nullable;

/**
 * Where an entry lives: the consumer column carries the tenant as {@code consumer@tenant}.
 * Unambiguous because a consumer name cannot contain {@code @}.
 */
record Scope(String column, String key, @Nullable String tenant) {
    /** The key (and tenant) as log lines and messages show it. */
    String label() {
        return Texts.quote(key) + (tenant == null ? "" : " (tenant " + Texts.quote(tenant) + ")");
    }
}
