package io.txbox;

import org.jspecify.annotations.Nullable;

/** Renders untrusted values for error messages: quoted, control characters escaped, shortened. */
public final class Texts {
    private static final int MAX_SHOWN = 80;

    private Texts() {}

    /** {@code "value"} with control characters as {@code \\uXXXX}, cut to 80 characters; {@code null} as-is. */
    public static String quote(@Nullable String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder(Math.min(value.length(), MAX_SHOWN) + 16).append('"');
        int shown = 0;
        for (int i = 0; i < value.length() && shown < MAX_SHOWN; i++, shown++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c) || Character.isSurrogate(c) && !validSurrogateAt(value, i)) {
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

    private static boolean validSurrogateAt(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
