package io.txbox.internal;

import io.txbox.Texts;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * How an idempotency key is shown in logs, error texts and the MDC: quoted as it is, or hashed
 * for keys that carry personal data (the inbox's and the consumers' {@code hashKeysInLogs}).
 */
public final class KeyLogs {
    /** Keys shown as they are, quoted. */
    public static final KeyLogs PLAIN = new KeyLogs(false);
    /** Keys shown as {@code sha256:} and 16 hex digits. */
    public static final KeyLogs HASHED = new KeyLogs(true);

    /** Hex digits of the SHA-256 kept: 64 bits, enough to tell keys apart in logs. */
    private static final int HASH_HEX_DIGITS = 16;

    private final boolean hash;

    private KeyLogs(boolean hash) {
        this.hash = hash;
    }

    public static KeyLogs of(boolean hash) {
        return hash ? HASHED : PLAIN;
    }

    /** The key for a log line or an error text. */
    public String show(String key) {
        return hash ? hashOf(key) : Texts.quote(key);
    }

    /** The key for the MDC: unquoted, or hashed. */
    public String mdc(String key) {
        return hash ? hashOf(key) : key;
    }

    /**
     * {@code text} (an error text that may name {@code key}, quoted as {@link Texts#quote} does)
     * with the key hashed when keys are; as it is otherwise.
     */
    public String redact(@Nullable String text, String key) {
        String t = String.valueOf(text);
        return hash ? t.replace(Texts.quote(key), hashOf(key)) : t;
    }

    /** {@code sha256:} and the first 16 hex digits of the SHA-256 of the key's UTF-8 bytes. */
    public static String hashOf(String key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return "sha256:" + HexFormat.of().formatHex(digest).substring(0, HASH_HEX_DIGITS);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
