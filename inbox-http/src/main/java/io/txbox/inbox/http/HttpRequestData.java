package io.txbox.inbox.http;

import io.txbox.InvalidInputException;
import io.txbox.internal.Args;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP request, as much of it as idempotency needs, independent of any framework.
 *
 * @param method the request method, such as {@code POST}
 * @param path the request target: path and, if present, {@code ?query}
 * @param headers request headers; names are matched case-insensitively by {@link #header};
 *     {@code null} becomes empty
 * @param body the request body, not copied; {@code null} becomes empty
 */
public record HttpRequestData(String method, String path, Map<String, List<String>> headers, byte[] body) {
    /**
     * @throws InvalidInputException if {@code method} or {@code path} is null
     */
    public HttpRequestData(String method, String path, @Nullable Map<String, List<String>> headers,
            byte @Nullable [] body) {
        this.method = Args.notNull(method, "method");
        this.path = Args.notNull(path, "path");
        this.headers = HttpResponseData.copyHeaders(headers);
        this.body = body == null ? new byte[0] : body;
    }

    /** The first value of the header {@code name} (any case), or {@code null}. */
    public @Nullable String header(String name) {
        Args.notNull(name, "name");
        return HttpResponseData.firstHeader(headers, name);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HttpRequestData r && method.equals(r.method) && path.equals(r.path)
                && headers.equals(r.headers) && Arrays.equals(body, r.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(method, path, headers, Arrays.hashCode(body));
    }

    @Override
    public String toString() {
        return "HttpRequestData[" + method + " " + path + ", body=" + body.length + " bytes]";
    }

}
