package io.txbox.inbox.http;

import java.util.List;
import java.util.Map;

/** RFC 9457 problem details, the error body of every response the helper makes itself. */
final class Problems {
    static final String CONTENT_TYPE = "application/problem+json";

    private Problems() {}

    static HttpResponseData problem(int status, String title, String detail) {
        String json = "{\"type\":\"about:blank\",\"title\":" + json(title) + ",\"status\":" + status
                + ",\"detail\":" + json(detail) + "}";
        return new HttpResponseData(status, Map.of("Content-Type", List.of(CONTENT_TYPE)),
                json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** A JSON string literal. */
    static String json(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    // control characters, and U+2028/2029 which break some JavaScript parsers
                    if (c < 0x20 || c == '\u2028' || c == '\u2029') {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
