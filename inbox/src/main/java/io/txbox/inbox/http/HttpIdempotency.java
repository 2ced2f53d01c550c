package io.txbox.inbox.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboxListener;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes HTTP requests that carry an {@code Idempotency-Key} header run once, following the
 * IETF Idempotency-Key draft. Built on the inbox's two-phase mode: the key is claimed (and
 * committed) before the application runs, and the response is stored when it returns.
 *
 * <table>
 * <caption>What a request gets</caption>
 * <tr><th>situation</th><th>response</th></tr>
 * <tr><td>key missing where one is required, or malformed</td><td>400, problem+json</td></tr>
 * <tr><td>first request with the key</td><td>the application runs; its response is returned</td></tr>
 * <tr><td>same key while the first is still running</td><td>409, problem+json</td></tr>
 * <tr><td>same key, different method, path or body</td><td>422, problem+json</td></tr>
 * <tr><td>same key after a response below 500</td><td>the stored status code, the
 *     {@linkplain Builder#replayedHeaders replayed headers} and the body, byte for byte</td></tr>
 * <tr><td>same key after a 5xx or an exception</td><td>the application runs again: 5xx
 *     outcomes are not stored</td></tr>
 * <tr><td>body larger than {@code maxBodyBytes}</td><td>413, problem+json</td></tr>
 * </table>
 *
 * <p>Cost per keyed request: one committed round trip to claim, one to store the response
 * (two claims when the key was seen before). Responses are kept for the inbox's retention
 * window; run {@code inbox().retentionTask(..)} to purge them.
 *
 * <p>From a servlet filter (no servlet dependency here): build an {@link HttpRequestData} from
 * the request (method, request URI plus query string, headers, body read into bytes), call
 * {@link #handle} with a handler that runs {@code chain.doFilter} on a request wrapper that
 * replays the body and a response wrapper that buffers status, headers and body into an
 * {@link HttpResponseData}, then write the returned response to the real response:
 * <pre>{@code
 * HttpResponseData out = idempotency.handle(requestData, req -> {
 *     BufferingResponse buffered = new BufferingResponse(response);   // your wrapper
 *     chain.doFilter(new ReplayingRequest(request, req.body()), buffered);
 *     return buffered.toResponseData();
 * });
 * response.setStatus(out.status());
 * out.headers().forEach((name, values) -> values.forEach(v -> response.addHeader(name, v)));
 * response.getOutputStream().write(out.body());
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class HttpIdempotency {
    /** Default {@link Builder#headerName}: {@value}. */
    public static final String DEFAULT_HEADER = "Idempotency-Key";
    /**
     * Default {@link Builder#replayedHeaders}: the representation headers a replay needs to
     * mean the same thing (lower case).
     */
    public static final Set<String> DEFAULT_REPLAYED_HEADERS = Set.of("content-type", "content-encoding",
            "content-language", "content-location", "location", "etag", "last-modified", "link", "cache-control");
    /** Default {@link Builder#maxBodyBytes}: 1 MiB. */
    public static final int DEFAULT_MAX_BODY_BYTES = Inbox.DEFAULT_MAX_PAYLOAD_BYTES;

    /** Message header names that carry the request line into the fingerprint. */
    static final String METHOD = ":method";
    static final String PATH = ":path";

    private static final Logger log = LoggerFactory.getLogger(HttpIdempotency.class);

    private final Inbox inbox;
    private final DataSource ds;
    private final String headerName;
    private final Predicate<HttpRequestData> keyRequired;
    private final Set<String> replayedHeaders;
    private final Function<HttpRequestData, @Nullable String> tenant;
    private final int maxBodyBytes;

    private HttpIdempotency(Builder b) {
        this.ds = b.ds;
        this.headerName = b.headerName;
        this.keyRequired = b.keyRequired;
        this.replayedHeaders = Set.copyOf(b.replayedHeaders);
        this.tenant = b.tenant;
        this.maxBodyBytes = b.maxBodyBytes;
        this.inbox = Inbox.builder(b.consumer)
                .tables(b.tables)
                .lease(b.lease)
                .retention(b.retention)
                .clock(b.clock)
                .maxPayloadBytes(b.maxBodyBytes)
                .listener(b.listener)
                .fingerprint(HttpIdempotency::fingerprint)
                .build();
    }

    /**
     * A builder for requests of {@code consumer} (a name for this API, stored with every key;
     * see {@link Inbox#builder(String)}), stored through {@code ds}.
     */
    public static Builder builder(DataSource ds, String consumer) {
        return new Builder(ds, consumer);
    }

    /** The inbox that stores the keys: for {@code retentionTask}, {@code listDead} and the like. */
    public Inbox inbox() {
        return inbox;
    }

    /** Runs the application for one HTTP request. */
    @FunctionalInterface
    public interface RequestHandler {
        /**
         * Handles {@code request}. A response of 500 or more, or an exception, is not stored:
         * a retry with the same key runs again. An exception becomes a 500 problem response
         * whose detail does not reveal it.
         */
        HttpResponseData handle(HttpRequestData request) throws Exception;
    }

    /**
     * Handles {@code request} with idempotency: see the table in the class description.
     * Database failures while claiming become 503 with {@code Retry-After}; the application
     * did not run.
     */
    public HttpResponseData handle(HttpRequestData request, RequestHandler handler) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(handler, "handler");
        String key = request.header(headerName);
        if (key == null) {
            if (keyRequired.test(request)) {
                return Problems.problem(400, "Bad Request", "This request requires an " + headerName + " header.");
            }
            return run(handler, request);
        }
        if (request.body().length > maxBodyBytes) {
            return Problems.problem(413, "Content Too Large", "The request body is " + request.body().length
                    + " bytes; requests with an " + headerName + " may have at most " + maxBodyBytes + ".");
        }
        InboundMessage message = InboundMessage.builder(key, request.body())
                .header(METHOD, request.method())
                .header(PATH, request.path())
                .tenant(tenant.apply(request))
                .build();
        Claim claim;
        try {
            claim = inbox.claim(ds, message);
        } catch (KeyReuseException e) {
            return Problems.problem(422, "Unprocessable Content", "The " + headerName + " " + Texts.quote(key)
                    + " was already used for a different request (method, path or body differ).");
        } catch (InvalidInputException e) {
            return Problems.problem(400, "Bad Request", "Invalid " + headerName + ": " + e.getMessage());
        } catch (TxboxException e) {
            log.error("{} - cannot claim idempotency key {}: {}", inbox.consumer(), Texts.quote(key), e.toString());
            HttpResponseData p = Problems.problem(503, "Service Unavailable",
                    "The request could not be recorded; it did not run. Retry later with the same " + headerName + ".");
            return withHeader(p, "Retry-After", "1");
        }
        return switch (claim.status()) {
            case DUPLICATE -> new HttpResponseData(
                    claim.resultStatus() == null ? 200 : claim.resultStatus(), claim.resultHeaders(), claim.result());
            case IN_FLIGHT -> Problems.problem(409, "Conflict", "A request with the " + headerName + " "
                    + Texts.quote(key) + " is still being processed. Retry later.");
            case DEAD -> Problems.problem(500, "Internal Server Error", "The request with the " + headerName + " "
                    + Texts.quote(key) + " failed too often and will not run again.");
            case ACQUIRED -> runClaimed(handler, request, claim);
        };
    }

    private HttpResponseData runClaimed(RequestHandler handler, HttpRequestData request, Claim claim) {
        HttpResponseData response = run(handler, request);
        try {
            if (response.status() >= 500) {
                // Not stored, per the draft: the client may retry and run it again.
                inbox.release(ds, claim);
            } else {
                inbox.complete(ds, claim, response.status(), replayed(response.headers()), response.body());
            }
        } catch (LeaseLostException e) {
            log.warn("{} - response for key {} not stored: the claim was taken over (the request ran longer than "
                    + "the lease)", inbox.consumer(), Texts.quote(claim.key()));
        } catch (TxboxException e) {
            log.error("{} - response for key {} not stored; a retry after the lease runs it again: {}",
                    inbox.consumer(), Texts.quote(claim.key()), e.toString());
        }
        return response;
    }

    private HttpResponseData run(RequestHandler handler, HttpRequestData request) {
        try {
            return Objects.requireNonNull(handler.handle(request), "the request handler returned null");
        } catch (Exception e) {
            log.error("{} - request handler failed for {} {}", inbox.consumer(), request.method(), request.path(), e);
            return Problems.problem(500, "Internal Server Error", "The request failed. It was not recorded; "
                    + "a retry with the same " + headerName + " runs it again.");
        }
    }

    private Map<String, List<String>> replayed(Map<String, List<String>> headers) {
        Map<String, List<String>> kept = new LinkedHashMap<>();
        headers.forEach((name, values) -> {
            if (replayedHeaders.contains(name.toLowerCase(Locale.ROOT))) {
                kept.put(name, values);
            }
        });
        return kept;
    }

    private static HttpResponseData withHeader(HttpResponseData r, String name, String value) {
        Map<String, List<String>> headers = new LinkedHashMap<>(r.headers());
        headers.put(name, List.of(value));
        return new HttpResponseData(r.status(), headers, r.body());
    }

    /** SHA-256 over method, path and body, separated so that no two requests share an encoding. */
    static byte[] fingerprint(InboundMessage m) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(Objects.requireNonNull(m.header(METHOD)).getBytes(StandardCharsets.UTF_8));
            digest.update((byte) 0);
            digest.update(Objects.requireNonNull(m.header(PATH)).getBytes(StandardCharsets.UTF_8));
            digest.update((byte) 0);
            return digest.digest(m.payload());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    // ---- com.sun.net.httpserver ----

    /**
     * Wraps a JDK {@code HttpServer} handler: keyed requests run {@code delegate} at most once
     * (per the table above), and replays are answered without calling it. The delegate's
     * response is buffered in memory before it is sent.
     */
    public HttpHandler forHttpServer(HttpHandler delegate) {
        Objects.requireNonNull(delegate, "delegate");
        return exchange -> {
            try (exchange) {
                byte[] body;
                try (InputStream in = exchange.getRequestBody()) {
                    body = in.readNBytes(maxBodyBytes + 1);
                }
                String target = exchange.getRequestURI().getRawPath()
                        + (exchange.getRequestURI().getRawQuery() == null ? "" : "?" + exchange.getRequestURI().getRawQuery());
                HttpRequestData request = new HttpRequestData(exchange.getRequestMethod(), target,
                        exchange.getRequestHeaders(), body);
                HttpResponseData response = handle(request, r -> {
                    BufferingExchange buffered = new BufferingExchange(exchange, r.body());
                    delegate.handle(buffered);
                    return buffered.response();
                });
                send(exchange, response);
            }
        };
    }

    private static void send(HttpExchange exchange, HttpResponseData response) throws IOException {
        response.headers().forEach((name, values) -> exchange.getResponseHeaders().put(name, values));
        byte[] body = response.body();
        boolean noBody = body.length == 0 || response.status() == 204 || response.status() == 304
                || "HEAD".equalsIgnoreCase(exchange.getRequestMethod());
        exchange.sendResponseHeaders(response.status(), noBody ? -1 : body.length);
        if (!noBody) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    /**
     * Builds an {@link HttpIdempotency}. Options are checked as they are set; messages name the
     * option and the bad value.
     */
    public static final class Builder {
        private final DataSource ds;
        private final String consumer;
        private TxboxTables tables = TxboxTables.defaults();
        private String headerName = DEFAULT_HEADER;
        private Predicate<HttpRequestData> keyRequired = r -> true;
        private Set<String> replayedHeaders = DEFAULT_REPLAYED_HEADERS;
        private Function<HttpRequestData, @Nullable String> tenant = r -> null;
        private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
        private Duration lease = Inbox.DEFAULT_LEASE;
        private Duration retention = Inbox.DEFAULT_RETENTION;
        private Clock clock = Clock.systemUTC();
        private InboxListener listener = InboxListener.NONE;

        private Builder(DataSource ds, String consumer) {
            if (ds == null) {
                throw new ConfigException("ds must not be null");
            }
            this.ds = ds;
            Inbox.builder(consumer); // checks the name now, not at build()
            this.consumer = consumer;
        }

        /** Where the tables live; default {@link TxboxTables#defaults()}. */
        public Builder tables(TxboxTables tables) {
            this.tables = require("tables", tables);
            return this;
        }

        /** The request header carrying the key; default {@value HttpIdempotency#DEFAULT_HEADER}. */
        public Builder headerName(String headerName) {
            if (headerName == null || !headerName.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]+")) {
                throw new ConfigException("headerName must be an HTTP token, but was " + Texts.quote(headerName));
            }
            this.headerName = headerName;
            return this;
        }

        /**
         * Which requests without a key are refused with 400; default all. Others run without
         * idempotency, for example {@code r -> !r.method().equals("GET")}.
         */
        public Builder keyRequired(Predicate<HttpRequestData> when) {
            this.keyRequired = require("keyRequired", when);
            return this;
        }

        /**
         * Response headers stored and replayed with the body (any case); default
         * {@link HttpIdempotency#DEFAULT_REPLAYED_HEADERS}. Never include per-response
         * secrets such as {@code Set-Cookie}.
         */
        public Builder replayedHeaders(Set<String> names) {
            require("replayedHeaders", names);
            Set<String> lower = new TreeSet<>();
            for (String n : names) {
                if (n == null || n.isBlank()) {
                    throw new ConfigException("replayedHeaders must not contain " + Texts.quote(n));
                }
                lower.add(n.toLowerCase(Locale.ROOT));
            }
            this.replayedHeaders = lower;
            return this;
        }

        /**
         * The tenant of a request (for example from its authenticated principal): part of the
         * key's scope, so two tenants may use the same key. Default: none.
         */
        public Builder tenant(Function<HttpRequestData, @Nullable String> tenant) {
            this.tenant = require("tenant", tenant);
            return this;
        }

        /** Largest request body, and largest stored response body; default 1 MiB. */
        public Builder maxBodyBytes(int maxBodyBytes) {
            if (maxBodyBytes < 0 || maxBodyBytes == Integer.MAX_VALUE) {
                throw new ConfigException("maxBodyBytes must be between 0 and " + (Integer.MAX_VALUE - 1)
                        + ", but was " + maxBodyBytes);
            }
            this.maxBodyBytes = maxBodyBytes;
            return this;
        }

        /**
         * How long a request may run before another request with its key may run it again;
         * default 30 s. See {@link Inbox.Builder#lease}.
         */
        public Builder lease(Duration lease) {
            Inbox.builder(consumer).lease(lease);
            this.lease = lease;
            return this;
        }

        /** How long responses are kept for replay; default 7 days. See {@link Inbox.Builder#retention}. */
        public Builder retention(Duration retention) {
            Inbox.builder(consumer).retention(retention);
            this.retention = retention;
            return this;
        }

        /** The clock for the retention cutoff; default the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = require("clock", clock);
            return this;
        }

        /** Hears every outcome (metrics); default none. */
        public Builder listener(InboxListener listener) {
            this.listener = require("listener", listener);
            return this;
        }

        public HttpIdempotency build() {
            return new HttpIdempotency(this);
        }

        private static <T> T require(String property, @Nullable T value) {
            if (value == null) {
                throw new ConfigException(property + " must not be null");
            }
            return value;
        }
    }
}
