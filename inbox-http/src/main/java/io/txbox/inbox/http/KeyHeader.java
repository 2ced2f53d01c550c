package io.txbox.inbox.http;

import io.txbox.InvalidInputException;
import io.txbox.Texts;

/**
 * Reads the key from an {@code Idempotency-Key} field value. The IETF draft defines the field
 * as an RFC 8941 structured-header string ({@code "abc"}); many clients send the bare value
 * ({@code abc}). Both name the same key.
 */
final class KeyHeader {
    private KeyHeader() {}

    /**
     * The key in {@code field}: the content of an RFC 8941 sf-string when {@code field} starts
     * with a double quote (after any surrounding whitespace), otherwise {@code field} itself
     * (the inbox's key rules apply to either).
     *
     * @throws InvalidInputException naming the problem, for a quoted value that is not a valid
     *     sf-string: no closing quote, a backslash before anything but {@code "} or {@code \},
     *     a character outside printable ASCII, or text after the closing quote
     */
    static String parse(String headerName, String field) {
        // Whitespace around a field value is not part of it (RFC 9110, section 5.5).
        String value = withoutOws(field);
        if (value.isEmpty() || value.charAt(0) != '"') {
            return field;
        }
        StringBuilder key = new StringBuilder(value.length());
        for (int i = 1; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '\\') {
                if (i + 1 == value.length()) {
                    throw malformed(headerName, value, "it ends with a backslash and has no closing quote");
                }
                char next = value.charAt(++i);
                if (next != '"' && next != '\\') {
                    throw malformed(headerName, value, "a backslash may only escape \" or \\, but escapes "
                            + describe(next));
                }
                key.append(next);
            } else if (c == '"') {
                if (i + 1 != value.length()) {
                    throw malformed(headerName, value, "it has " + Texts.quote(value.substring(i + 1))
                            + " after the closing quote");
                }
                return key.toString();
            } else if (c < 0x20 || c > 0x7e) {
                throw malformed(headerName, value, "a quoted key may only hold printable ASCII (0x20 to 0x7E), but "
                        + "has " + describe(c));
            } else {
                key.append(c);
            }
        }
        throw malformed(headerName, value, "the quoted string has no closing quote");
    }

    /** {@code s} without leading and trailing spaces and tabs. */
    private static String withoutOws(String s) {
        int from = 0;
        int to = s.length();
        while (from < to && (s.charAt(from) == ' ' || s.charAt(from) == '\t')) {
            from++;
        }
        while (to > from && (s.charAt(to - 1) == ' ' || s.charAt(to - 1) == '\t')) {
            to--;
        }
        return s.substring(from, to);
    }

    private static String describe(char c) {
        return c >= 0x20 && c <= 0x7e ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }

    private static InvalidInputException malformed(String headerName, String value, String problem) {
        return new InvalidInputException(headerName + " " + Texts.quote(value)
                + " is not a valid structured-header string: " + problem);
    }
}
