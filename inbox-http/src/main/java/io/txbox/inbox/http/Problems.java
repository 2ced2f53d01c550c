package io.txbox.inbox.http;

import io.txbox.internal.JsonStrings;
import java.util.List;
import java.util.Map;

/** RFC 9457 problem details, the error body of every response the helper makes itself. */
final class Problems {
    static final String CONTENT_TYPE = "application/problem+json";

    private Problems() {}

    static HttpResponseData problem(int status, String title, String detail) {
        String json = "{\"type\":\"about:blank\",\"title\":" + JsonStrings.literal(title) + ",\"status\":" + status
                + ",\"detail\":" + JsonStrings.literal(detail) + "}";
        return new HttpResponseData(status, Map.of("Content-Type", List.of(CONTENT_TYPE)),
                json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
}
