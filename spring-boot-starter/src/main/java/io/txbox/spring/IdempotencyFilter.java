package io.txbox.spring;

import io.txbox.Texts;
import io.txbox.inbox.http.HttpIdempotency;
import io.txbox.inbox.http.HttpRequestData;
import io.txbox.inbox.http.HttpResponseData;
import io.txbox.internal.JsonStrings;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.http.MediaType;
import org.springframework.util.AntPathMatcher;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The Spring MVC Idempotency-Key filter ({@code txbox.http.idempotency.*}): requests with one
 * of the configured methods on one of the configured paths run through {@link HttpIdempotency}'s
 * transactional form, in a Spring transaction that the controller's {@code JdbcTemplate}, JPA
 * repositories and {@code @Transactional} services join and that also stores the response.
 * Other requests pass untouched. The response is buffered in memory before it is sent.
 *
 * <p>The filter reads the request body itself, so a covered request whose body the servlet
 * container would parse into parameters or parts (a form, {@code
 * application/x-www-form-urlencoded}, or {@code multipart/*}) is answered 415 at once, with
 * nothing run or stored and the key left unused: under the filter the application would see
 * neither the form's parameters nor its parts, and would answer (and store) something the
 * client never meant.
 */
final class IdempotencyFilter extends OncePerRequestFilter implements Ordered {
    private static final String FORM_URLENCODED = "application/x-www-form-urlencoded";

    private final HttpIdempotency idempotency;
    private final Set<String> methods;
    private final List<String> paths;
    private final int maxBodyBytes;
    private final int order;
    private final AntPathMatcher matcher = new AntPathMatcher();

    IdempotencyFilter(HttpIdempotency idempotency, Set<String> methods, List<String> paths, int maxBodyBytes,
            int order) {
        this.idempotency = idempotency;
        this.methods = methods;
        this.paths = paths;
        this.maxBodyBytes = maxBodyBytes;
        this.order = order;
    }

    @Override
    public int getOrder() {
        return order;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        if (!methods.contains(request.getMethod().toUpperCase(Locale.ROOT))) {
            return true;
        }
        String path = request.getRequestURI().substring(request.getContextPath().length());
        return paths.stream().noneMatch(pattern -> matcher.match(pattern, path));
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws IOException {
        String form = formMediaType(request.getContentType());
        if (form != null) {
            send(unsupportedMediaType(form), response);
            return;
        }
        // one byte over the limit is enough for HttpIdempotency to refuse the body (413) whole
        byte[] body = request.getInputStream().readNBytes(maxBodyBytes + 1);
        String query = request.getQueryString();
        HttpRequestData data = new HttpRequestData(request.getMethod(),
                request.getRequestURI() + (query == null ? "" : "?" + query), headers(request), body);
        HttpResponseData out = idempotency.handle(data, (tx, req) -> {
            CapturedResponse captured = new CapturedResponse(response);
            chain.doFilter(new ReplayedRequest(request, req.body()), captured);
            if (request.isAsyncStarted()) {
                throw new ServletException("asynchronous request processing is not supported under the"
                        + " Idempotency-Key filter: the response must be complete when the handler returns");
            }
            SpringTransactions.flush(tx);
            return captured.toResponseData();
        });
        send(out, response);
    }

    /**
     * The media type of a body the container parses into parameters or parts ({@code
     * application/x-www-form-urlencoded}, {@code multipart/*}), lower-cased; {@code null} for
     * any other or no {@code Content-Type}.
     */
    private static @Nullable String formMediaType(@Nullable String contentType) {
        if (contentType == null) {
            return null;
        }
        int semicolon = contentType.indexOf(';');
        String type = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).strip()
                .toLowerCase(Locale.ROOT);
        return type.equals(FORM_URLENCODED) || type.startsWith("multipart/") ? type : null;
    }

    private static HttpResponseData unsupportedMediaType(String form) {
        String detail = "a " + Texts.quote(form) + " body is not accepted with an Idempotency-Key here: send the body as another"
                + " media type, such as application/json or text/plain. Nothing ran and nothing was stored; the"
                + " key is still unused.";
        String json = "{\"type\":\"about:blank\",\"title\":\"Unsupported Media Type\",\"status\":415,\"detail\":"
                + JsonStrings.literal(detail) + "}";
        return new HttpResponseData(415, Map.of("Content-Type", List.of(MediaType.APPLICATION_PROBLEM_JSON_VALUE)),
                json.getBytes(StandardCharsets.UTF_8));
    }

    private static Map<String, List<String>> headers(HttpServletRequest request) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (String name : Collections.list(request.getHeaderNames())) {
            headers.put(name, Collections.list(request.getHeaders(name)));
        }
        return headers;
    }

    private static void send(HttpResponseData out, HttpServletResponse response) throws IOException {
        response.setStatus(out.status());
        out.headers().forEach((name, values) -> {
            if (name.equalsIgnoreCase("Content-Type")) {
                values.stream().findFirst().ifPresent(response::setContentType);
            } else if (!name.equalsIgnoreCase("Content-Length")) {
                values.forEach(value -> response.addHeader(name, value));
            }
        });
        response.setContentLength(out.body().length);
        response.getOutputStream().write(out.body());
    }

    /** The request with its body, already read, read again by the application. */
    private static final class ReplayedRequest extends HttpServletRequestWrapper {
        private final byte[] body;

        ReplayedRequest(HttpServletRequest request, byte[] body) {
            super(request);
            this.body = body;
        }

        @Override
        public ServletInputStream getInputStream() {
            ByteArrayInputStream in = new ByteArrayInputStream(body);
            return new ServletInputStream() {
                @Override
                public int read() throws IOException {
                    return in.read();
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    return in.read(b, off, len);
                }

                @Override
                public boolean isFinished() {
                    return in.available() == 0;
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setReadListener(ReadListener listener) {
                    throw new UnsupportedOperationException("the body was read by the Idempotency-Key filter");
                }
            };
        }

        @Override
        public BufferedReader getReader() {
            String encoding = getCharacterEncoding();
            Charset charset = encoding == null ? StandardCharsets.ISO_8859_1 : Charset.forName(encoding);
            return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), charset));
        }

        @Override
        public int getContentLength() {
            return body.length;
        }

        @Override
        public long getContentLengthLong() {
            return body.length;
        }
    }
}
