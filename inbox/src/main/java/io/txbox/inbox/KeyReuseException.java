package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.TxboxException;
import org.jspecify.annotations.Nullable;

/**
 * A key arrived again with a payload whose fingerprint differs from the first delivery's. The
 * stored result is never replayed for it: the sender reused a key for a different message.
 * Nothing was written. The message names the consumer and key, never the payload.
 */
public class KeyReuseException extends TxboxException {
    private static final long serialVersionUID = 1L;

    private final String consumer;
    private final String key;
    private final @Nullable String tenant;

    public KeyReuseException(String consumer, String key, @Nullable String tenant) {
        super("key " + Texts.quote(key) + (tenant == null ? "" : " of tenant " + Texts.quote(tenant))
                + " was already received by consumer " + Texts.quote(consumer)
                + " with a different payload fingerprint; a reused key is never replayed");
        this.consumer = consumer;
        this.key = key;
        this.tenant = tenant;
    }

    /** The reused key. */
    public String key() {
        return key;
    }

    public @Nullable String tenant() {
        return tenant;
    }

    /** The consumer that received the key first. */
    public String consumer() {
        return consumer;
    }
}
