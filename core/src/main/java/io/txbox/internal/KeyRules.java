package io.txbox.internal;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import java.nio.charset.StandardCharsets;

/** The rules every idempotency key obeys, on both the outbox and the inbox side. */
public final class KeyRules {
    /** Longest key, in bytes of UTF-8. */
    public static final int MAX_KEY_BYTES = 255;

    private static final java.util.regex.Pattern CONSUMER = java.util.regex.Pattern.compile("[A-Za-z0-9._:/-]{1,128}");

    private KeyRules() {}

    /**
     * Checks a consumer name, the scope of every inbox entry (database or Redis): 1 to 128
     * characters from {@code A-Z a-z 0-9 . _ : / -}. Never {@code @}, which separates a tenant.
     *
     * @throws io.txbox.ConfigException naming the bad value
     */
    public static String consumer(String consumer) {
        if (consumer == null || !CONSUMER.matcher(consumer).matches()) {
            throw new io.txbox.ConfigException("consumer must be 1 to 128 characters from A-Z a-z 0-9 . _ : / -, "
                    + "but was " + Texts.quote(consumer));
        }
        return consumer;
    }

    /**
     * Checks a key: not null, not empty, valid UTF-16 (so it encodes to UTF-8), no control
     * characters, at most 255 bytes of UTF-8.
     */
    public static String check(String what, String key) {
        if (key == null) {
            throw new InvalidInputException(what + " is missing (null)");
        }
        if (key.isEmpty()) {
            throw new InvalidInputException(what + " is empty");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isISOControl(c)) {
                throw new InvalidInputException(what + " contains control character U+"
                        + String.format("%04X", (int) c) + " at index " + i + ": " + Texts.quote(key));
            }
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new InvalidInputException(what + " is not valid Unicode (lone surrogate at index " + i
                        + "): " + Texts.quote(key));
            }
        }
        int bytes = utf8Length(key);
        if (bytes > MAX_KEY_BYTES) {
            throw new InvalidInputException(what + " is " + bytes + " bytes of UTF-8, more than the limit of "
                    + MAX_KEY_BYTES + ": " + Texts.quote(key));
        }
        return key;
    }

    /** Decodes raw key bytes (from a broker header), rejecting anything that is not UTF-8. */
    public static String decode(String what, byte[] raw) {
        if (raw == null) {
            throw new InvalidInputException(what + " is missing (null)");
        }
        var decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT);
        try {
            return check(what, decoder.decode(java.nio.ByteBuffer.wrap(raw)).toString());
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new InvalidInputException(what + " is not valid UTF-8 (" + raw.length + " bytes)");
        }
    }

    static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c)) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }
}
