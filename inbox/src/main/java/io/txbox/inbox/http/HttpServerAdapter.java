package io.txbox.inbox.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDK {@code HttpServer} side of {@link HttpIdempotency}: reads the request with its body
 * capped at {@code maxBodyBytes + 1} bytes (so that an oversized body is told apart without
 * reading it whole), sends the answer, and after a 413 drops what is left of the refused body.
 */
final class HttpServerAdapter {
    /**
     * How much of a refused (over-cap) request body is read and dropped after answering 413,
     * so that the client can read the answer: 16 MiB.
     */
    static final long MAX_SKIPPED_BYTES = 16L << 20;

    private static final Logger log = LoggerFactory.getLogger(HttpIdempotency.class);

    private HttpServerAdapter() {}

    /** Answers one exchange, given the request read from it. */
    @FunctionalInterface
    interface Exchanges {
        HttpResponseData answer(HttpExchange exchange, HttpRequestData request);
    }

    static HttpHandler of(int maxBodyBytes, Exchanges answer) {
        return exchange -> {
            try (exchange; InputStream in = exchange.getRequestBody()) {
                byte[] body = in.readNBytes(maxBodyBytes + 1);
                String target = exchange.getRequestURI().getRawPath()
                        + (exchange.getRequestURI().getRawQuery() == null ? "" : "?" + exchange.getRequestURI().getRawQuery());
                HttpRequestData request = new HttpRequestData(exchange.getRequestMethod(), target,
                        exchange.getRequestHeaders(), body);
                // A body over the cap was read only in part: the rest is skipped after the answer
                // is out, because closing a socket with unread data resets it and can destroy
                // the 413 on its way to the client.
                send(exchange, answer.answer(exchange, request), body.length > maxBodyBytes ? in : null);
            }
        };
    }

    private static void send(HttpExchange exchange, HttpResponseData response, @Nullable InputStream unread)
            throws IOException {
        response.headers().forEach((name, values) -> exchange.getResponseHeaders().put(name, values));
        byte[] body = response.body();
        boolean noBody = body.length == 0 || response.status() == 204 || response.status() == 304
                || "HEAD".equalsIgnoreCase(exchange.getRequestMethod());
        exchange.sendResponseHeaders(response.status(), noBody ? -1 : body.length);
        if (!noBody) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
                out.flush();
                if (unread != null) {
                    skipRest(unread);
                }
            }
        }
    }

    /** Reads and drops what is left of a refused request body, at most {@value #MAX_SKIPPED_BYTES} bytes. */
    private static void skipRest(InputStream in) {
        byte[] buffer = new byte[8192];
        long left = MAX_SKIPPED_BYTES;
        try {
            for (int n; left > 0 && (n = in.read(buffer, 0, (int) Math.min(buffer.length, left))) > 0; ) {
                left -= n;
            }
        } catch (IOException e) {
            // the client gave up; the connection is closed next anyway
            log.debug("request body not skipped: {}", e.toString());
        }
    }

}
