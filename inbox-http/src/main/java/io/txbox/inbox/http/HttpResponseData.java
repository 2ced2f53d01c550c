package io.txbox.inbox.http;

import io.txbox.InvalidInputException;
import io.txbox.internal.Args;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP response, independent of any framework.
 *
 * @param status the status code, 100 to 599
 * @param headers response headers in order; a name may carry several values; {@code null}
 *     becomes empty
 * @param body the response body, not copied; {@code null} becomes empty
 */
public record HttpResponseData(int status, Map<String, List<String>> headers, byte[] body) {
    /**
     * @throws IllegalArgumentException if {@code status} is outside 100 to 599
     */
    public HttpResponseData(int status, @Nullable Map<String, List<String>> headers, byte @Nullable [] body) {
        if (status < 100 || status > 599) {
            throw new IllegalArgumentException("status must be between 100 and 599, but was " + status);
        }
        this.status = status;
        this.headers = copyHeaders(headers);
        this.body = body == null ? new byte[0] : body;
    }

    /**
     * A response with one {@code Content-Type} header.
     *
     * @throws InvalidInputException if {@code contentType} or {@code body} is null
     */
    public static HttpResponseData of(int status, String contentType, byte[] body) {
        Args.notNull(contentType, "contentType");
        Args.notNull(body, "body");
        return new HttpResponseData(status, Map.of("Content-Type", List.of(contentType)), body);
    }

    /**
     * A UTF-8 text response with the given content type.
     *
     * @throws InvalidInputException if {@code contentType} or {@code body} is null
     */
    public static HttpResponseData of(int status, String contentType, String body) {
        Args.notNull(contentType, "contentType");
        Args.notNull(body, "body");
        return of(status, contentType, body.getBytes(StandardCharsets.UTF_8));
    }

    /** The first value of the header {@code name} (any case), or {@code null}. */
    public @Nullable String header(String name) {
        Args.notNull(name, "name");
        return firstHeader(headers, name);
    }

    /** The header lookup of requests and responses alike. */
    static @Nullable String firstHeader(Map<String, List<String>> headers, String name) {
        for (Map.Entry<String, List<String>> e : headers.entrySet()) {
            if (e.getKey().equalsIgnoreCase(name) && !e.getValue().isEmpty()) {
                return e.getValue().get(0);
            }
        }
        return null;
    }

    static Map<String, List<String>> copyHeaders(@Nullable Map<String, List<String>> headers) {
        if (headers == null || headers.isEmpty()) {
            return Map.of();
        }
        Map<String, List<String>> copy = new LinkedHashMap<>();
        headers.forEach((name, values) -> {
            if (name != null && values != null) {
                copy.put(name, values.stream().filter(Objects::nonNull).toList());
            }
        });
        return Collections.unmodifiableMap(copy);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HttpResponseData r && status == r.status && headers.equals(r.headers)
                && Arrays.equals(body, r.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, headers, Arrays.hashCode(body));
    }

    @Override
    public String toString() {
        return "HttpResponseData[" + status + ", headers=" + headers.keySet() + ", body=" + body.length + " bytes]";
    }
}
