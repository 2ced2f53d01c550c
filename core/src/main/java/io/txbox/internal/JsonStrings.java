package io.txbox.internal;

import io.txbox.Texts;
import java.util.ArrayList;
import java.util.List;

/**
 * A list of strings as a JSON array ({@code ["a","b"]}), the shape of MariaDB's and MySQL's
 * {@code json} columns that stand in for PostgreSQL's {@code text[]} (header names and values).
 * Only arrays of strings: nothing else is ever written to those columns. Also the one JSON
 * string encoder of the project ({@link #literal}).
 */
public final class JsonStrings {
    private JsonStrings() {}

    /** {@code values} as a JSON array of strings. */
    public static String encode(Iterable<String> values) {
        StringBuilder b = new StringBuilder("[");
        boolean first = true;
        for (String v : values) {
            if (!first) {
                b.append(',');
            }
            first = false;
            appendLiteral(b, v);
        }
        return b.append(']').toString();
    }

    /** {@code value} as a JSON string literal, quotes included. */
    public static String literal(String value) {
        return appendLiteral(new StringBuilder(value.length() + 2), value).toString();
    }

    private static StringBuilder appendLiteral(StringBuilder b, String v) {
        b.append('"');
        for (int i = 0; i < v.length(); i++) {
            char ch = v.charAt(i);
            switch (ch) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    // control characters, and U+2028/2029, which break some JavaScript parsers
                    if (ch < 0x20 || ch == '\u2028' || ch == '\u2029') {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
                }
            }
        }
        return b.append('"');
    }

    /**
     * The strings of a JSON array of strings, as the server returns it (which may re-format it).
     *
     * @throws IllegalArgumentException if {@code json} is not an array of strings
     */
    public static List<String> decode(String json) {
        List<String> out = new ArrayList<>();
        int i = skip(json, 0);
        expect(json, i++, '[');
        i = skip(json, i);
        if (i < json.length() && json.charAt(i) == ']') {
            return out;
        }
        while (true) {
            i = skip(json, i);
            expect(json, i++, '"');
            StringBuilder s = new StringBuilder();
            while (true) {
                if (i >= json.length()) {
                    throw bad(json);
                }
                char ch = json.charAt(i++);
                if (ch == '"') {
                    break;
                }
                if (ch != '\\') {
                    s.append(ch);
                    continue;
                }
                if (i >= json.length()) {
                    throw bad(json);
                }
                char e = json.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> s.append(e);
                    case 'b' -> s.append('\b');
                    case 'f' -> s.append('\f');
                    case 'n' -> s.append('\n');
                    case 'r' -> s.append('\r');
                    case 't' -> s.append('\t');
                    case 'u' -> {
                        if (i + 4 > json.length()) {
                            throw bad(json);
                        }
                        s.append((char) Integer.parseInt(json.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw bad(json);
                }
            }
            out.add(s.toString());
            i = skip(json, i);
            if (i < json.length() && json.charAt(i) == ',') {
                i++;
                continue;
            }
            expect(json, i, ']');
            return out;
        }
    }

    private static int skip(String json, int i) {
        while (i < json.length() && Character.isWhitespace(json.charAt(i))) {
            i++;
        }
        return i;
    }

    private static void expect(String json, int i, char ch) {
        if (i >= json.length() || json.charAt(i) != ch) {
            throw bad(json);
        }
    }

    private static IllegalArgumentException bad(String json) {
        return new IllegalArgumentException("not a JSON array of strings: " + Texts.quote(json));
    }
}
