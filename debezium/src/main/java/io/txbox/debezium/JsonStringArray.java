package io.txbox.debezium;

import java.util.ArrayList;
import java.util.List;

/**
 * Parses the JSON arrays of strings that MariaDB and MySQL keep in the outbox's header columns.
 * This module depends on nothing but Kafka Connect's API, hence a parser of its own for the one
 * shape it reads.
 */
final class JsonStringArray {
    private final String text;
    private int at;

    private JsonStringArray(String text) {
        this.text = text;
    }

    /** The strings of {@code json}; throws {@link IllegalArgumentException} if it is not an array of strings. */
    static List<String> parse(String json) {
        return new JsonStringArray(json).array();
    }

    private List<String> array() {
        List<String> items = new ArrayList<>();
        take('[');
        if (peek() == ']') {
            at++;
        } else {
            do {
                items.add(string());
            } while (takeEither(',', ']') == ',');
        }
        if (peek() != -1) {
            throw malformed();
        }
        return items;
    }

    private String string() {
        take('"');
        StringBuilder b = new StringBuilder();
        for (;;) {
            char c = next();
            if (c == '"') {
                return b.toString();
            }
            b.append(c == '\\' ? escaped(next()) : c);
        }
    }

    private char escaped(char c) {
        return switch (c) {
            case '"', '\\', '/' -> c;
            case 'b' -> '\b';
            case 'f' -> '\f';
            case 'n' -> '\n';
            case 'r' -> '\r';
            case 't' -> '\t';
            case 'u' -> {
                if (at + 4 > text.length()) {
                    throw malformed();
                }
                try {
                    char u = (char) Integer.parseInt(text.substring(at, at + 4), 16);
                    at += 4;
                    yield u;
                } catch (NumberFormatException e) {
                    throw malformed();
                }
            }
            default -> throw malformed();
        };
    }

    /** The next non-blank character, not consumed; -1 at the end. */
    private int peek() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
        return at < text.length() ? text.charAt(at) : -1;
    }

    private void take(char expected) {
        if (peek() != expected) {
            throw malformed();
        }
        at++;
    }

    private char takeEither(char a, char b) {
        int c = peek();
        if (c != a && c != b) {
            throw malformed();
        }
        at++;
        return (char) c;
    }

    private char next() {
        if (at >= text.length()) {
            throw malformed();
        }
        return text.charAt(at++);
    }

    private IllegalArgumentException malformed() {
        String shown = text.length() > 80 ? text.substring(0, 80) + "..." : text;
        return new IllegalArgumentException("not a JSON array of strings at character " + at + ": " + shown);
    }
}
