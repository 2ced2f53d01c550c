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
import io.txbox.internal.Args;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
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
import java.util.function.UnaryOperator;
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
 * <tr><td>request body larger than {@link Builder#maxBodyBytes}, with or without a key</td><td>413,
 *     problem+json; the application does not run (a body is never cut short)</td></tr>
 * <tr><td>key missing where one is required, or malformed</td><td>400, problem+json naming the
 *     problem</td></tr>
 * <tr><td>first request with the key</td><td>the application runs; its response is returned</td></tr>
 * <tr><td>same key while the first is still running</td><td>409, problem+json</td></tr>
 * <tr><td>same key, different method, path or body</td><td>422, problem+json</td></tr>
 * <tr><td>same key after a response below 500</td><td>the stored status code, the
 *     {@linkplain Builder#replayedHeaders replayed headers} and the body, byte for byte, plus
 *     {@value #REPLAYED_HEADER}{@code : true}</td></tr>
 * <tr><td>same key after a 5xx or an exception</td><td>the application runs again: 5xx
 *     outcomes are not stored, and however many there were, they never lock the key</td></tr>
 * <tr><td>same key after a request that outlived its lease (it hung, or the process stopped)</td>
 *     <td>409 while the lease holds, then the application runs again; with a configured
 *     {@link Builder#maxAttempts}, see there</td></tr>
 * <tr><td>same key, DEAD (only with a configured {@link Builder#maxAttempts})</td><td>500,
 *     problem+json; the application does not run</td></tr>
 * <tr><td>the request ran longer than the lease and a retry took it over (transactional
 *     handlers only)</td><td>409, problem+json; the late request's writes are rolled back</td></tr>
 * </table>
 *
 * <h2>The key</h2>
 * The draft defines {@code Idempotency-Key} as an RFC 8941 structured-header string, so
 * {@code Idempotency-Key: "abc"} is the key {@code abc}; the bare form
 * {@code Idempotency-Key: abc}, which many clients send, is the same key. A value that starts
 * with a double quote (after any spaces or tabs, which are not part of it) is read as an
 * sf-string: it must end with the closing quote, hold only
 * printable ASCII (0x20 to 0x7E), and use a backslash only before {@code "} or {@code \};
 * otherwise the answer is 400 naming the problem. Any other value is the key as it stands. The
 * key then follows the inbox's rules (non-empty, at most 255 bytes of UTF-8, no control
 * characters), or the answer is 400.
 *
 * <h2>Handlers that write to the database: the transactional form</h2>
 * {@link #handle(HttpRequestData, TransactionalRequestHandler)} (and
 * {@link #forHttpServer(TransactionalHttpHandler)}) hands the application a transaction on the
 * helper's {@code DataSource} and stores the response in that same transaction: the business
 * writes, the outbox messages and the stored response commit together or not at all. A crash
 * anywhere before the commit leaves no effect, and a retry after the lease runs the request
 * again; a crash after it leaves the stored response, and a retry gets it back. Use this form
 * whenever the request writes to the database:
 * <pre>{@code
 * HttpResponseData out = idempotency.handle(requestData, (tx, req) -> {
 *     String orderId = orders.insert(tx, req.body());          // never commit tx yourself
 *     outbox.send(tx, paymentStep(orderId));
 *     return HttpResponseData.of(201, "application/json", "{\"orderId\":\"" + orderId + "\"}");
 * });
 * }</pre>
 *
 * <h2>Handlers without database effects</h2>
 * {@link #handle(HttpRequestData, RequestHandler)} (and {@link #forHttpServer(HttpHandler)})
 * stores the response in a transaction of its own after the handler returns. It is for
 * handlers without database effects, or whose effects are idempotent by themselves (a payment
 * gateway called with the key). A handler that commits its own database writes gets them
 * twice if the process dies between its commit and the stored response, or if it runs longer
 * than the lease and a retry takes it over.
 *
 * <p>From a servlet filter (no servlet dependency here): build an {@link HttpRequestData} from
 * the request (method, request URI plus query string, headers, body read into bytes), call
 * {@link #handle} with a handler that runs {@code chain.doFilter} on a request wrapper that
 * replays the body and a response wrapper that buffers status, headers and body into an
 * {@link HttpResponseData}, then write the returned response to the real response. With the
 * transactional form, hand {@code tx} to the application, for example as a request attribute:
 * <pre>{@code
 * HttpResponseData out = idempotency.handle(requestData, (tx, req) -> {
 *     BufferingResponse buffered = new BufferingResponse(response);   // your wrapper
 *     request.setAttribute("txbox.tx", tx);                           // the application writes on it
 *     chain.doFilter(new ReplayingRequest(request, req.body()), buffered);
 *     return buffered.toResponseData();
 * });
 * response.setStatus(out.status());
 * out.headers().forEach((name, values) -> values.forEach(v -> response.addHeader(name, v)));
 * response.getOutputStream().write(out.body());
 * }</pre>
 *
 * <p>Cost per keyed request: one committed round trip to claim, one to store the response
 * (in the application's transaction with the transactional form); two claims when the key was
 * seen before. Responses are kept for the inbox's retention window; run
 * {@code inbox().retentionTask(..)} to purge them.
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
    /**
     * The response header that marks a replayed response: {@value}, with the value
     * {@code true}. Absent from responses the application produced for this request.
     */
    public static final String REPLAYED_HEADER = "Idempotent-Replayed";
    /** Default {@link Builder#maxBodyBytes}: 1 MiB. */
    public static final int DEFAULT_MAX_BODY_BYTES = Inbox.DEFAULT_MAX_PAYLOAD_BYTES;
    /** {@link Builder#maxAttempts} that never makes a key DEAD: {@value}. */
    public static final int NO_ATTEMPT_LIMIT = Integer.MAX_VALUE;
    /** Default {@link Builder#maxAttempts}: {@link #NO_ATTEMPT_LIMIT}, no limit. */
    public static final int DEFAULT_MAX_ATTEMPTS = NO_ATTEMPT_LIMIT;

    /**
     * How much of a refused (over-cap) request body the {@code HttpServer} adapters read and
     * drop after answering 413, so that the client can read the answer: 16 MiB.
     */
    static final long MAX_SKIPPED_BYTES = 16L << 20;

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
        this.inbox = wrapped(b, Inbox.builder(b.consumer)
                .tables(b.tables)
                .lease(b.lease)
                .retention(b.retention)
                .clock(b.clock)
                .maxPayloadBytes(b.maxBodyBytes)
                .maxAttempts(b.maxAttempts)
                .listener(b.listener)
                .fingerprint(HttpIdempotency::fingerprint)
                .build());
    }

    private static Inbox wrapped(Builder b, Inbox built) {
        Inbox wrapped = b.inboxWrapper.apply(built);
        if (wrapped == null || !built.consumer().equals(wrapped.consumer())) {
            throw new ConfigException("wrapInbox must return an inbox of consumer " + Texts.quote(built.consumer())
                    + ", but returned " + (wrapped == null ? "null" : "one of " + Texts.quote(wrapped.consumer())));
        }
        return wrapped;
    }

    /**
     * A builder for requests of {@code consumer} (a name for this API, stored with every key;
     * see {@link Inbox#builder(String)}), stored through {@code ds}, which also provides the
     * transactions of {@linkplain TransactionalRequestHandler transactional handlers}.
     */
    public static Builder builder(DataSource ds, String consumer) {
        return new Builder(ds, consumer);
    }

    /** The inbox that stores the keys: for {@code retentionTask}, {@code listDead} and the like. */
    public Inbox inbox() {
        return inbox;
    }

    /**
     * Runs the application for one HTTP request, outside the transaction that stores its
     * response: for handlers without database effects. See the class description.
     */
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
     * Runs the application for one HTTP request inside the transaction that also stores its
     * response, so business writes, outbox messages and the stored response commit together.
     */
    @FunctionalInterface
    public interface TransactionalRequestHandler {
        /**
         * Handles {@code request}, writing through {@code tx} (auto-commit off). Never commit,
         * roll back or close {@code tx}: the helper does. A response below 500 commits the
         * writes together with the stored response, so a handler that refuses a request with a
         * 4xx should not have written anything it wants undone. A response of 500 or more, or
         * an exception, rolls {@code tx} back and is not stored: a retry with the same key runs
         * again. An exception becomes a 500 problem response whose detail does not reveal it.
         */
        HttpResponseData handle(Connection tx, HttpRequestData request) throws Exception;
    }

    /**
     * Handles {@code request} with idempotency, for a handler without database effects: see
     * the class description, and prefer {@link #handle(HttpRequestData, TransactionalRequestHandler)}
     * for handlers that write to the database. Database failures while claiming become 503
     * with {@code Retry-After}; the application did not run.
     */
    public HttpResponseData handle(HttpRequestData request, RequestHandler handler) {
        Args.notNull(request, "request");
        Args.notNull(handler, "handler");
        return idempotent(request, claim -> claim == null ? run(handler, request) : runClaimed(handler, request, claim));
    }

    /**
     * Handles {@code request} with idempotency, running {@code handler} in a transaction on the
     * helper's {@code DataSource} and storing a response below 500 in that same transaction
     * before it commits: the request's writes and its stored response commit together or not
     * at all (see the class description). Requests without a key, where
     * {@linkplain Builder#keyRequired allowed}, run in a transaction too, with nothing stored.
     *
     * <p>If the handler ran longer than the lease and a retry with the same key took the
     * request over meanwhile, its transaction is rolled back and the answer is 409: the retry's
     * writes are the only ones. Database failures become 503 with {@code Retry-After}; a retry
     * with the same key gets the stored response if the commit went through, and runs the
     * request otherwise.
     *
     * <p>Cost: the connection is held from the start of the handler to the commit; the entry's
     * row is locked from the completion to the commit.
     */
    public HttpResponseData handle(HttpRequestData request, TransactionalRequestHandler handler) {
        Args.notNull(request, "request");
        Args.notNull(handler, "handler");
        return idempotent(request, claim -> runInTransaction(handler, request, claim));
    }

    /** What runs once a request may run: with its acquired claim, or {@code null} when it has no key. */
    @FunctionalInterface
    private interface Execution {
        HttpResponseData run(@Nullable Claim claim);
    }

    private HttpResponseData idempotent(HttpRequestData request, Execution execution) {
        if (request.body().length > maxBodyBytes) {
            // Refused whole, keyed or not: a handler never sees a cut body.
            return Problems.problem(413, "Content Too Large", "The request body is larger than the limit of "
                    + maxBodyBytes + " bytes.");
        }
        String field = request.header(headerName);
        if (field == null) {
            if (keyRequired.test(request)) {
                return Problems.problem(400, "Bad Request", "This request requires an " + headerName + " header.");
            }
            return execution.run(null);
        }
        String key;
        try {
            key = KeyHeader.parse(headerName, field);
        } catch (InvalidInputException e) {
            return Problems.problem(400, "Bad Request", "Invalid " + e.getMessage() + ".");
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
            return unavailable("The request could not be recorded; it did not run.");
        }
        return switch (claim.status()) {
            case DUPLICATE -> withHeader(new HttpResponseData(claim.resultStatus() == null ? 200 : claim.resultStatus(),
                    claim.resultHeaders(), claim.result()), REPLAYED_HEADER, "true");
            case IN_FLIGHT -> Problems.problem(409, "Conflict", "A request with the " + headerName + " "
                    + Texts.quote(key) + " is still being processed. Retry later.");
            case DEAD -> Problems.problem(500, "Internal Server Error", "The request with the " + headerName + " "
                    + Texts.quote(key) + " outlived its lease too often (it hung, or the server stopped) and "
                    + "will not run again.");
            case ACQUIRED -> execution.run(claim);
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
            return failed(request, e);
        }
    }

    /**
     * Handler, completion and commit in one transaction. The claim is released (5xx, failures)
     * only after the transaction's connection is back, so a request never holds two.
     */
    private HttpResponseData runInTransaction(TransactionalRequestHandler handler, HttpRequestData request,
            @Nullable Claim claim) {
        HttpResponseData answer;
        boolean release = true;
        String what = claim == null ? request.method() + " " + request.path() : "key " + Texts.quote(claim.key());
        try (Connection tx = ds.getConnection()) {
            boolean autoCommit = tx.getAutoCommit();
            tx.setAutoCommit(false);
            try {
                answer = runAndComplete(handler, request, claim, tx);
                release = answer.status() >= 500;
            } finally {
                restoreAutoCommit(tx, autoCommit);
            }
        } catch (SQLException e) {
            // No connection, or the commit failed: rolled back, or (a lost connection during
            // the commit) unknown. Releasing is safe either way: it is fenced, and a commit that
            // went through has completed the entry, so the release finds nothing to release.
            log.error("{} - transaction for {} failed; a retry with the same {} runs it again unless it committed: {}",
                    inbox.consumer(), what, headerName, e.toString());
            answer = unavailable("The request could not be completed; its outcome is unknown.");
        }
        if (release && claim != null) {
            releaseQuietly(claim);
        }
        return answer;
    }

    /** Runs the handler on {@code tx} and ends {@code tx}; 5xx answers roll back. */
    private HttpResponseData runAndComplete(TransactionalRequestHandler handler, HttpRequestData request,
            @Nullable Claim claim, Connection tx) throws SQLException {
        HttpResponseData response;
        try {
            response = Objects.requireNonNull(handler.handle(tx, request), "the request handler returned null");
        } catch (Exception e) {
            rollbackQuietly(tx);
            return failed(request, e);
        }
        if (response.status() >= 500) {
            // Not stored, per the draft, and its writes undone: the client may retry and run it again.
            rollbackQuietly(tx);
            return response;
        }
        if (claim != null) {
            try {
                inbox.complete(tx, claim, response.status(), replayed(response.headers()), response.body());
            } catch (LeaseLostException e) {
                rollbackQuietly(tx);
                log.warn("{} - key {} was taken over by a retry while this request ran (longer than the lease); "
                        + "its writes are rolled back", inbox.consumer(), Texts.quote(claim.key()));
                return Problems.problem(409, "Conflict", "The request with the " + headerName + " "
                        + Texts.quote(claim.key()) + " ran longer than allowed and was taken over by a retry; "
                        + "this run had no effect. Retry to get the response.");
            } catch (InvalidInputException e) {
                rollbackQuietly(tx);
                log.error("{} - response for key {} cannot be stored, the request is rolled back: {}",
                        inbox.consumer(), Texts.quote(claim.key()), e.getMessage());
                return Problems.problem(500, "Internal Server Error", "The response could not be recorded; "
                        + "the request had no effect.");
            } catch (TxboxException e) {
                rollbackQuietly(tx);
                log.error("{} - response for key {} not stored, the request is rolled back: {}",
                        inbox.consumer(), Texts.quote(claim.key()), e.toString());
                return unavailable("The request could not be recorded; it had no effect.");
            }
        }
        tx.commit();
        return response;
    }

    private HttpResponseData failed(HttpRequestData request, Exception e) {
        log.error("{} - request handler failed for {} {}", inbox.consumer(), request.method(), request.path(), e);
        return Problems.problem(500, "Internal Server Error", "The request failed. It was not recorded; "
                + "a retry with the same " + headerName + " runs it again.");
    }

    private HttpResponseData unavailable(String what) {
        return withHeader(Problems.problem(503, "Service Unavailable",
                what + " Retry later with the same " + headerName + "."), "Retry-After", "1");
    }

    private void releaseQuietly(Claim claim) {
        try {
            inbox.release(ds, claim);
        } catch (LeaseLostException e) {
            log.info("{} - key {} not released: completed or taken over meanwhile", inbox.consumer(),
                    Texts.quote(claim.key()));
        } catch (TxboxException e) {
            log.error("{} - key {} not released; a retry after the lease runs it again: {}", inbox.consumer(),
                    Texts.quote(claim.key()), e.toString());
        }
    }

    private void rollbackQuietly(Connection tx) {
        try {
            tx.rollback();
        } catch (SQLException e) {
            log.warn("{} - rollback failed: {}", inbox.consumer(), e.toString());
        }
    }

    private static void restoreAutoCommit(Connection tx, boolean autoCommit) {
        if (autoCommit) {
            try {
                tx.setAutoCommit(true);
            } catch (SQLException e) {
                // the connection is closed next; a pool resets it anyway
                log.debug("cannot restore auto-commit: {}", e.toString());
            }
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
     * A JDK {@code HttpServer} handler that runs inside the transaction that also stores its
     * response; see {@link TransactionalRequestHandler}.
     */
    @FunctionalInterface
    public interface TransactionalHttpHandler {
        /**
         * Handles {@code exchange}, writing through {@code tx} (auto-commit off), which it must
         * not commit, roll back or close. The response it sends is buffered, and stored with
         * its writes when it is below 500.
         */
        void handle(Connection tx, HttpExchange exchange) throws Exception;
    }

    /**
     * Wraps a JDK {@code HttpServer} handler without database effects: keyed requests run
     * {@code delegate} at most once per the table above, with the caveat of
     * {@link #handle(HttpRequestData, RequestHandler)}, and replays are answered without calling
     * it. Prefer {@link #forHttpServer(TransactionalHttpHandler)} for handlers that write to the
     * database. The delegate's response is buffered in memory before it is sent.
     */
    public HttpHandler forHttpServer(HttpHandler delegate) {
        Args.notNull(delegate, "delegate");
        return adapter((exchange, request) -> handle(request, r -> {
            BufferingExchange buffered = new BufferingExchange(exchange, r.body());
            delegate.handle(buffered);
            return buffered.response();
        }));
    }

    /**
     * Wraps a JDK {@code HttpServer} handler that writes to the database: keyed requests run
     * {@code delegate} at most once, in a transaction that also stores its response (see
     * {@link #handle(HttpRequestData, TransactionalRequestHandler)}), and replays are answered
     * without calling it. The delegate's response is buffered in memory before it is sent.
     */
    public HttpHandler forHttpServer(TransactionalHttpHandler delegate) {
        Args.notNull(delegate, "delegate");
        return adapter((exchange, request) -> handle(request, (tx, r) -> {
            BufferingExchange buffered = new BufferingExchange(exchange, r.body());
            delegate.handle(tx, buffered);
            return buffered.response();
        }));
    }

    @FunctionalInterface
    private interface Exchanges {
        HttpResponseData answer(HttpExchange exchange, HttpRequestData request);
    }

    private HttpHandler adapter(Exchanges answer) {
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
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration lease = Inbox.DEFAULT_LEASE;
        private Duration retention = Inbox.DEFAULT_RETENTION;
        private Clock clock = Clock.systemUTC();
        private InboxListener listener = InboxListener.NONE;
        private UnaryOperator<Inbox> inboxWrapper = UnaryOperator.identity();

        private Builder(DataSource ds, String consumer) {
            this.ds = Args.configured(ds, "ds");
            Inbox.builder(Args.configured(consumer, "consumer")); // checks the name now, not at build()
            this.consumer = consumer;
        }

        /** Where the tables live; default {@link TxboxTables#defaults()}. */
        public Builder tables(TxboxTables tables) {
            this.tables = Args.configured(tables, "tables");
            return this;
        }

        /** The request header carrying the key; default {@value HttpIdempotency#DEFAULT_HEADER}. */
        public Builder headerName(String headerName) {
            Args.configured(headerName, "headerName");
            if (!headerName.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]+")) {
                throw new ConfigException("headerName must be an HTTP token, but was " + Texts.quote(headerName));
            }
            this.headerName = headerName;
            return this;
        }

        /**
         * Which requests without a key are refused with 400; default all. Others run without
         * idempotency, for example {@code r -> !r.method().equals("GET")}.
         */
        public Builder keyRequired(Predicate<HttpRequestData> keyRequired) {
            this.keyRequired = Args.configured(keyRequired, "keyRequired");
            return this;
        }

        /**
         * Response headers stored and replayed with the body (any case); default
         * {@link HttpIdempotency#DEFAULT_REPLAYED_HEADERS}. Never include per-response
         * secrets such as {@code Set-Cookie}.
         */
        public Builder replayedHeaders(Set<String> replayedHeaders) {
            Args.configured(replayedHeaders, "replayedHeaders");
            Set<String> lower = new TreeSet<>();
            for (String n : replayedHeaders) {
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
            this.tenant = Args.configured(tenant, "tenant");
            return this;
        }

        /**
         * Largest request body, and largest stored response body; default 1 MiB. A request
         * whose body is larger gets 413 whether or not it carries a key, and the application
         * does not run: a body is never cut short. The {@code HttpServer} adapters read at most
         * {@code maxBodyBytes + 1} bytes of a request body, with or without
         * {@code Content-Length}, to tell; after the 413 is sent they read and drop up to 16 MiB
         * more of the refused body, so that a client still sending it gets the answer rather
         * than a reset connection. A client that sends even more may see the connection reset.
         */
        public Builder maxBodyBytes(int maxBodyBytes) {
            if (maxBodyBytes < 0 || maxBodyBytes == Integer.MAX_VALUE) {
                throw new ConfigException("maxBodyBytes must be between 0 and " + (Integer.MAX_VALUE - 1)
                        + ", but was " + maxBodyBytes);
            }
            this.maxBodyBytes = maxBodyBytes;
            return this;
        }

        /**
         * How many times a key's runs may end without an answer before the key is DEAD;
         * default {@link HttpIdempotency#NO_ATTEMPT_LIMIT}: never. At least 1.
         *
         * <p>A run ends without an answer when it outlives its {@linkplain #lease lease}: the
         * request hung, or the process stopped. The next request with the key after the lease
         * ran out takes the key over and runs again; once {@code maxAttempts} runs have ended
         * that way, that request instead makes the key DEAD, and it and every later request
         * with the key get 500 (problem+json) without the application running, until an
         * operator calls {@code inbox().resetDead(ds, key)} (DEAD keys are never purged;
         * {@code inbox().listDead(..)} lists them). A 5xx answer or an exception releases the
         * key and is not such a run, so 5xx answers never make a key DEAD.
         *
         * <p>Why no limit by default: a client, not the server, decides how often to retry, and
         * the draft lets every retry after a 5xx run again; the lease already allows at most
         * one run of a key at a time. A limit guards against a request that hangs or kills the
         * process every time it runs, at the price of a key that no client can use again.
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1) {
                throw new ConfigException("maxAttempts must be at least 1, but was " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * How long a request may run before another request with its key may run it again;
         * default 30 s. See {@link Inbox.Builder#lease}.
         */
        public Builder lease(Duration lease) {
            Inbox.builder(consumer).lease(Args.configured(lease, "lease"));
            this.lease = lease;
            return this;
        }

        /** How long responses are kept for replay; default 7 days. See {@link Inbox.Builder#retention}. */
        public Builder retention(Duration retention) {
            Inbox.builder(consumer).retention(Args.configured(retention, "retention"));
            this.retention = retention;
            return this;
        }

        /** The clock for the retention cutoff; default the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Args.configured(clock, "clock");
            return this;
        }

        /** Hears every outcome (metrics); default none. */
        public Builder listener(InboxListener listener) {
            this.listener = Args.configured(listener, "listener");
            return this;
        }

        /**
         * Wraps the inbox this helper builds before any request uses it, for example in the
         * Redis fast path of the {@code txbox-redis} module:
         * {@code .wrapInbox(db -> HybridInbox.builder(db).build())}. The wrapper gets the
         * configured database inbox and must return an inbox of the same consumer; closing
         * what it creates is the caller's job. Default: none.
         */
        public Builder wrapInbox(UnaryOperator<Inbox> wrapper) {
            this.inboxWrapper = Args.configured(wrapper, "wrapInbox");
            return this;
        }

        public HttpIdempotency build() {
            return new HttpIdempotency(this);
        }
    }
}
