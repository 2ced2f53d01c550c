package io.txbox.inbox;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Computes the fingerprint stored with each key. A later delivery of the same key with a
 * different fingerprint is refused with {@link KeyReuseException} instead of being answered
 * from the stored result.
 */
@FunctionalInterface
public interface Fingerprint {
    /**
     * The fingerprint of {@code message}, or {@code null} to skip the check for it. Keep it
     * short (a digest): it is stored in every entry.
     */
    byte @Nullable [] of(InboundMessage message);

    /** SHA-256 of the payload bytes: the default. */
    static Fingerprint sha256() {
        return message -> sha256(message.payload());
    }

    /**
     * SHA-256 of a canonical form of the message that the caller chooses, for payloads whose
     * bytes can differ for the same meaning (re-serialized JSON, added headers).
     */
    static Fingerprint sha256Of(Function<InboundMessage, byte[]> canonicalForm) {
        io.txbox.internal.Args.notNull(canonicalForm, "canonicalForm");
        return message -> sha256(canonicalForm.apply(message));
    }

    /** No fingerprint: a reused key is never detected. */
    static Fingerprint none() {
        return message -> null;
    }

    /** SHA-256 of {@code bytes}. */
    static byte[] sha256(byte[] bytes) {
        io.txbox.internal.Args.notNull(bytes, "bytes");
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
