package io.txbox.inbox.consumer.internal;

import io.txbox.Texts;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * How an idempotency key is shown in logs and in the MDC: quoted as it is, or hashed for keys
 * that carry personal data ({@link ConsumerBuilder#hashKeysInLogs}).
 */
final class KeyLogs {
    /** Hex digits of the SHA-256 kept: 64 bits, enough to tell keys apart in logs. */
    private static final int HASH_HEX_DIGITS = 16;

    private final boolean hash;

    KeyLogs(boolean hash) {
        this.hash = hash;
    }

    /** The key for a log line. */
    String show(String key) {
        return hash ? hashOf(key) : Texts.quote(key);
    }

    /** The key for the MDC: unquoted, or hashed. */
    String mdc(String key) {
        return hash ? hashOf(key) : key;
    }

    static String hashOf(String key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return "sha256:" + HexFormat.of().formatHex(digest).substring(0, HASH_HEX_DIGITS);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
