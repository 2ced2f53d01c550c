package io.txbox.inbox.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.opentelemetry.api.OpenTelemetry;
import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.internal.Args;
import io.txbox.internal.OpenTelemetryTracing;
import io.txbox.internal.Tracing;
import java.sql.Connection;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Makes HTTP requests that carry an {@code Idempotency-Key} header run once, following the
 * IETF Idempotency-Key draft. Built on a {@link TwoPhaseStore}: the key is claimed (and
 * stored) before the application runs, and the response is stored when it returns. The store
 * is the database inbox's two-phase mode ({@link #builder(Inbox, DataSource)}), or any other
 * two-phase store such as the {@code txbox-redis} module's {@code RedisStore}
 * ({@link #builder(TwoPhaseStore)}, without the transactional form).
 *
 * <pre>{@code
 * Inbox keys = Inbox.builder("orders-api").tables(tables)
 *         .fingerprint(HttpIdempotency.fingerprint())           // method, path and body: required
 *         .maxAttempts(HttpIdempotency.NO_ATTEMPT_LIMIT)        // the draft's behaviour; see below
 *         .build();
 * HttpIdempotency idempotency = HttpIdempotency.builder(keys, dataSource).build();
 * }</pre>
 *
 * <p>The store's options apply: its {@code lease} is how long a request may run before a
 * retry with its key may run it again; its retention is how long responses are replayed (run
 * the inbox's {@code retentionTask(..)} to purge them); its payload limit caps the stored
 * response body; its listener hears every outcome.
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
 *     <td>409 while the lease holds, then the application runs again, until the store's
 *     {@code maxAttempts} such runs (see below)</td></tr>
 * <tr><td>same key, DEAD</td><td>500, problem+json; the application does not run</td></tr>
 * <tr><td>the request ran longer than the lease and a retry took it over (transactional
 *     handlers only)</td><td>409, problem+json; the late request's writes are rolled back</td></tr>
 * </table>
 *
 * <h2>Attempts</h2>
 * A run ends without an answer when it outlives its lease: the request hung, or the process
 * stopped. The next request with the key after the lease ran out takes the key over and runs
 * again; once the store's {@code maxAttempts} runs have ended that way, that request instead
 * makes the key DEAD, and it and every later request with the key get 500 (problem+json)
 * without the application running, until an operator resets the key ({@code resetDead}; DEAD
 * keys are never purged, {@code listDead} lists them). A 5xx answer or an exception releases the
 * key and is not such a run, so 5xx answers never make a key DEAD. A client, not the server,
 * decides how often to retry, and the draft lets every retry after a 5xx run again; the lease
 * already allows at most one run of a key at a time. So an inbox for HTTP is usually built with
 * {@link #NO_ATTEMPT_LIMIT}; a limit guards against a request that hangs or kills the process
 * every time it runs, at the price of a key that no client can use again.
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
 * <p>A servlet filter, or any other server, builds an {@link HttpRequestData} and writes the
 * returned {@link HttpResponseData}: see {@code docs/http.md} for the recipe. The Spring Boot
 * starter ships such a filter.
 *
 * <p>Cost per keyed request: one committed round trip to claim, one to store the response
 * (in the application's transaction with the transactional form); two claims when the key was
 * seen before. On a {@code RedisStore}: one Lua script for each.
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
    /**
     * The inbox's {@code maxAttempts} that never makes a key DEAD: {@value}. The draft lets
     * every retry run again, so a database inbox for HTTP is usually built with it; see the
     * class description.
     */
    public static final int NO_ATTEMPT_LIMIT = Integer.MAX_VALUE;

    /** The request span's method attribute, as OpenTelemetry's HTTP conventions name it. */
    private static final String METHOD_ATTRIBUTE = "http.request.method";


    private final TwoPhaseStore store;
    /** The transactional form, on the database inbox; null on a store alone. */
    private final @Nullable TransactionalForm transactional;
    private final PlainForm plain;
    private final KeyProtocol protocol;
    private final int maxBodyBytes;
    private final Tracing tracing;

    private HttpIdempotency(Builder b) {
        this.store = b.store;
        Responses responses = new Responses(b.store, b.headerName, b.replayedHeaders);
        this.protocol = new KeyProtocol(b.store, responses, b.headerName, b.keyRequired, b.tenant, b.maxBodyBytes);
        this.plain = new PlainForm(b.store, responses);
        this.transactional = b.inbox == null || b.ds == null ? null : new TransactionalForm(b.inbox, b.ds, responses);
        this.maxBodyBytes = b.maxBodyBytes;
        this.tracing = b.tracing;
    }

    /**
     * A builder for requests whose keys the database inbox {@code inbox} keeps, through
     * {@code ds}, which also provides the transactions of
     * {@linkplain TransactionalRequestHandler transactional handlers}. The inbox must
     * fingerprint requests with {@link #fingerprint()} (checked by {@link Builder#build()}); its
     * options decide the rest: {@code lease} (how long a request may run before a retry may run
     * it again), {@code retention} (how long responses are replayed), {@code maxPayloadBytes}
     * (the largest stored response body), {@code maxAttempts}, {@code listener}. A
     * {@code HybridInbox} of the {@code txbox-redis} module in front of the database inbox
     * works the same way.
     */
    public static Builder builder(Inbox inbox, DataSource ds) {
        Args.configured(inbox, "inbox");
        Args.configured(ds, "ds");
        return new Builder(inbox.twoPhase(ds), inbox, ds);
    }

    /**
     * A builder for requests whose keys {@code store} keeps, for example a {@code RedisStore}
     * of the {@code txbox-redis} module, for a service without a relational database. Only the
     * form without database effects, {@link #handle(HttpRequestData, RequestHandler)}, is
     * available: the transactional form needs {@link #builder(Inbox, DataSource)}. The store
     * must fingerprint requests with {@link #fingerprint()} (checked by {@link Builder#build()}).
     */
    public static Builder builder(TwoPhaseStore store) {
        return new Builder(Args.configured(store, "store"), null, null);
    }

    /**
     * The fingerprint the store behind this helper must use: SHA-256 over the request's method,
     * path and body, so that a key reused for another request is refused (422) rather than
     * answered with the other request's response. Pass it to the inbox's (or store's)
     * {@code fingerprint(..)} option.
     */
    public static Fingerprint fingerprint() {
        return RequestFingerprint::digest;
    }

    /** The store that keeps the keys: the consumer, and the claims themselves. */
    public TwoPhaseStore store() {
        return store;
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
        return traced(request, () -> protocol.answer(request, claim -> plain.run(handler, request, claim)));
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
     *
     * @throws IllegalStateException if this helper was built on a two-phase store alone
     *     ({@link #builder(TwoPhaseStore)}), which has no database transaction to join
     */
    public HttpResponseData handle(HttpRequestData request, TransactionalRequestHandler handler) {
        Args.notNull(request, "request");
        Args.notNull(handler, "handler");
        TransactionalForm form = requireTransactions();
        return traced(request, () -> protocol.answer(request, claim -> form.run(handler, request, claim)));
    }

    /**
     * Answers {@code request} in a server span continuing the trace of its {@code traceparent}
     * header, unless a span is already current (the server's own instrumentation).
     */
    private HttpResponseData traced(HttpRequestData request, Tracing.Work<HttpResponseData, RuntimeException> answer) {
        return tracing.inSpan(Tracing.Kind.SERVER, request.method(), request::header,
                Map.of(METHOD_ATTRIBUTE, request.method()), response -> response.status() >= 500, answer);
    }

    /**
     * The transactional form needs the database inbox: refused when built on a store alone,
     * before any request, so that the mistake shows at start-up.
     */
    private TransactionalForm requireTransactions() {
        if (transactional == null) {
            throw new IllegalStateException("the transactional form stores the response in the request's database "
                    + "transaction, but this helper of consumer " + Texts.quote(store.consumer()) + " was built on a "
                    + "two-phase store alone (" + store + "); build it with HttpIdempotency.builder(inbox, dataSource), "
                    + "or use the form without database effects");
        }
        return transactional;
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
        return HttpServerAdapter.of(maxBodyBytes, (exchange, request) -> handle(request, r -> {
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
     *
     * @throws IllegalStateException if this helper was built on a two-phase store alone
     */
    public HttpHandler forHttpServer(TransactionalHttpHandler delegate) {
        Args.notNull(delegate, "delegate");
        requireTransactions();
        return HttpServerAdapter.of(maxBodyBytes, (exchange, request) -> handle(request, (tx, r) -> {
            BufferingExchange buffered = new BufferingExchange(exchange, r.body());
            delegate.handle(tx, buffered);
            return buffered.response();
        }));
    }

    /**
     * Builds an {@link HttpIdempotency}. Options are checked as they are set; messages name the
     * option and the bad value.
     */
    public static final class Builder {
        private final TwoPhaseStore store;
        private final @Nullable Inbox inbox;
        private @Nullable DataSource ds;
        private String headerName = DEFAULT_HEADER;
        private Predicate<HttpRequestData> keyRequired = r -> true;
        private Set<String> replayedHeaders = DEFAULT_REPLAYED_HEADERS;
        private Function<HttpRequestData, @Nullable String> tenant = r -> null;
        private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
        private Tracing tracing = Tracing.global();

        private Builder(TwoPhaseStore store, @Nullable Inbox inbox, @Nullable DataSource ds) {
            this.store = store;
            this.inbox = inbox;
            this.ds = ds;
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
         * Largest request body; default 1 MiB. A request whose body is larger gets 413 whether
         * or not it carries a key, and the application does not run: a body is never cut short.
         * It does not cap responses: the largest stored response body is the inbox's
         * {@code maxPayloadBytes} (or the store's own limit). A larger response still goes to
         * the client but is not stored (logged as an error), so a retry with its key runs again
         * once the lease ends. The {@code HttpServer} adapters read at most
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
         * The OpenTelemetry instance request spans are recorded with; default the global one
         * ({@code GlobalOpenTelemetry}, as installed by the application or the Java agent) when
         * the OpenTelemetry API is on the classpath. When no span is current as a request comes
         * in, it is answered in a {@code SERVER} span named after its method, whose parent is
         * the trace context of its W3C {@code traceparent} / {@code tracestate} headers; when the
         * server's own instrumentation already has a span current, that span is kept. Either way
         * what the handler sends through the outbox continues the request's trace. Only needed
         * when that instance is not the global one; the OpenTelemetry API
         * ({@code io.opentelemetry:opentelemetry-api}) is an optional dependency, and without it
         * requests run without spans.
         */
        public Builder openTelemetry(OpenTelemetry openTelemetry) {
            this.tracing = OpenTelemetryTracing.of(openTelemetry);
            return this;
        }

        /**
         * Where the transactional form gets its transactions; default the {@code ds} of
         * {@link HttpIdempotency#builder(Inbox, DataSource)}, which also keeps the keys. Each
         * {@code getConnection()} must return a connection to the inbox's database in a
         * transaction of its own, which {@code commit()} commits, {@code rollback()} undoes
         * and {@code close()} ends. A framework that manages transactions passes a data source
         * whose connections are its transactions, so that handlers write through the
         * framework (the Spring Boot starter's filter does).
         *
         * @throws ConfigException if this builder is on a two-phase store alone
         *     ({@link HttpIdempotency#builder(TwoPhaseStore)}), which has no transactional form
         */
        public Builder transactions(DataSource transactions) {
            Args.configured(transactions, "transactions");
            if (inbox == null) {
                throw new ConfigException("transactions needs the database inbox: build with "
                        + "HttpIdempotency.builder(inbox, dataSource)");
            }
            this.ds = transactions;
            return this;
        }

        /**
         * An immutable, thread-safe helper.
         *
         * @throws ConfigException if the store does not fingerprint requests by method, path
         *     and body (build it with {@link HttpIdempotency#fingerprint()})
         */
        public HttpIdempotency build() {
            RequestFingerprint.check(store);
            return new HttpIdempotency(this);
        }
    }
}
