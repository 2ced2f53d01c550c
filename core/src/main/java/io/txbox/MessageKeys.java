package io.txbox;

import io.txbox.internal.Args;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;

/**
 * Deterministic idempotency keys for producers. A producer that may retry must send the same key
 * for the same logical operation, or the retry runs as a new one; a random UUID per attempt
 * defeats every deduplication downstream. {@link #uuid5(UUID, String)} derives the key from what
 * identifies the operation instead:
 *
 * <pre>{@code
 * static final UUID CHARGES = MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "https://shop.example/charges");
 *
 * String key = MessageKeys.uuid5(CHARGES, customerId + "/" + orderId).toString();  // same inputs, same key
 * }</pre>
 *
 * <p>The keys are name-based UUIDs of version 5 (SHA-1) as RFC 9562 section 5.5 defines them, so
 * any other RFC 9562 implementation (Python's {@code uuid.uuid5}, PostgreSQL's {@code
 * uuid-ossp} {@code uuid_generate_v5}, ...) derives the same key from the same namespace and
 * name. SHA-1 serves here as a fingerprint, not as protection: a key is as guessable as its
 * name.
 *
 * <p>This class only computes; it holds no state and is safe to call from any thread.
 */
public final class MessageKeys {
    /** The RFC 9562 namespace for fully qualified domain names: {@code 6ba7b810-9dad-11d1-80b4-00c04fd430c8}. */
    public static final UUID NAMESPACE_DNS = UUID.fromString("6ba7b810-9dad-11d1-80b4-00c04fd430c8");
    /** The RFC 9562 namespace for URLs: {@code 6ba7b811-9dad-11d1-80b4-00c04fd430c8}. */
    public static final UUID NAMESPACE_URL = UUID.fromString("6ba7b811-9dad-11d1-80b4-00c04fd430c8");
    /** The RFC 9562 namespace for ISO OIDs: {@code 6ba7b812-9dad-11d1-80b4-00c04fd430c8}. */
    public static final UUID NAMESPACE_OID = UUID.fromString("6ba7b812-9dad-11d1-80b4-00c04fd430c8");
    /** The RFC 9562 namespace for X.500 distinguished names: {@code 6ba7b814-9dad-11d1-80b4-00c04fd430c8}. */
    public static final UUID NAMESPACE_X500 = UUID.fromString("6ba7b814-9dad-11d1-80b4-00c04fd430c8");

    private MessageKeys() {}

    /**
     * The version 5 (SHA-1, name-based) UUID of {@code name} in {@code namespace}, per RFC 9562
     * section 5.5: the SHA-1 of the namespace's 16 bytes followed by the name in UTF-8, with the
     * version set to 5 and the variant to the RFC's. The same namespace and name always give
     * the same UUID; {@code uuid5(NAMESPACE_DNS, "www.example.com")} is {@code
     * 2ed6657d-e927-568b-95e1-2665a8aea6a2}.
     *
     * <p>Choose one namespace per kind of operation (one for charges, one for refunds), for
     * example {@code uuid5(NAMESPACE_URL, "https://shop.example/charges")} kept in a constant, so
     * that the same ids in two kinds of operation give two keys. When the name joins several
     * values, put a separator between them that none of them contains ({@code customerId + "/" +
     * orderId}): plain concatenation makes {@code "ab" + "c"} and {@code "a" + "bc"} the same
     * name, and so the same key.
     *
     * @param namespace the namespace, one of the {@code NAMESPACE_*} constants or a UUID of the
     *     application's own
     * @param name what identifies the operation within the namespace: not empty, valid Unicode
     *     (no lone surrogate), encoded as UTF-8 with no normalization
     * @return a UUID of version 5 and the RFC 9562 variant; its {@code toString()} is a valid
     *     txbox key (36 characters)
     * @throws InvalidInputException if {@code namespace} or {@code name} is null, {@code name}
     *     is empty (an empty name usually means a missing id, and would give every such
     *     operation one key), or {@code name} has a lone surrogate (which UTF-8 cannot encode)
     */
    public static UUID uuid5(UUID namespace, String name) {
        Args.notNull(namespace, "namespace");
        Args.notNull(name, "name");
        if (name.isEmpty()) {
            throw new InvalidInputException("name is empty: pass what identifies the operation, such as"
                    + " an order id; an empty name would give every such operation the same key");
        }
        MessageDigest sha1 = sha1();
        sha1.update(ByteBuffer.allocate(16)
                .putLong(namespace.getMostSignificantBits())
                .putLong(namespace.getLeastSignificantBits())
                .flip());
        sha1.update(utf8(name));
        ByteBuffer hash = ByteBuffer.wrap(sha1.digest());
        long msb = hash.getLong();
        long lsb = hash.getLong();
        msb = (msb & ~0xF000L) | 0x5000L;                           // version 5 in bits 48-51
        lsb = (lsb & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;    // variant 10 in bits 64-65
        return new UUID(msb, lsb);
    }

    private static ByteBuffer utf8(String name) {
        try {
            return StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(name));
        } catch (CharacterCodingException e) {
            // String.getBytes would turn each lone surrogate into '?', so two names would share a key
            throw new InvalidInputException("name is not valid Unicode (it has a lone surrogate): "
                    + Texts.quote(name));
        }
    }

    private static MessageDigest sha1() {
        try {
            return MessageDigest.getInstance("SHA-1");
        } catch (NoSuchAlgorithmException e) {
            // every Java platform must provide SHA-1 (java.security.MessageDigest's contract)
            throw new IllegalStateException("this Java runtime has no SHA-1", e);
        }
    }
}
