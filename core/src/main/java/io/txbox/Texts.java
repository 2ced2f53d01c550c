package io.txbox;

import org.jspecify.annotations.Nullable;

/** Renders untrusted values for error messages: quoted, control characters escaped, shortened. */
public final class Texts {
    private static final int MAX_SHOWN = 80;
    /** {@code scheme://user:password@}: the user stays visible, it is useful and not secret. */
    private static final java.util.regex.Pattern USERINFO =
            java.util.regex.Pattern.compile("(?i)([a-z][a-z0-9+.-]*://[^:/@\\s]*):([^@\\s/]*)@");
    /** What a password is replaced with. */
    public static final String MASK = "****";

    private Texts() {}

    /**
     * {@code "value"} with an inner {@code "} and {@code \\} escaped by a backslash (so that the
     * quotes shown are always the value's bounds), control characters as {@code \\uXXXX}, cut to
     * 80 characters; {@code null} as-is.
     */
    public static String quote(@Nullable String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder(Math.min(value.length(), MAX_SHOWN) + 16).append('"');
        int shown = 0;
        for (int i = 0; i < value.length() && shown < MAX_SHOWN; i++, shown++) {
            char c = value.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (Character.isISOControl(c) || Character.isSurrogate(c) && !validSurrogateAt(value, i)) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
        if (value.length() > MAX_SHOWN) {
            sb.append("... (").append(value.length()).append(" chars)");
        }
        return sb.toString();
    }

    /**
     * {@code text} with the password of every {@code scheme://user:password@} masked, as in
     * {@code amqp://relay:****@rabbit:5672}. Works on text that is not a valid URI too; {@code
     * null} as {@code "null"}.
     */
    public static String redactUrl(@Nullable String text) {
        if (text == null) {
            return "null";
        }
        return USERINFO.matcher(text).replaceAll(m -> java.util.regex.Matcher.quoteReplacement(m.group(1) + ":" + MASK + "@"));
    }

    private static boolean validSurrogateAt(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
