package io.txbox.inbox.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Idempotency-Key helper behind a real JDK {@link HttpServer}, driven by a real HTTP
 * client: every status the IETF draft asks for. Run on each database by a subclass
 * ({@link HttpIdempotencyPostgresIT}, {@link HttpIdempotencyMariaDbIT}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class HttpIdempotencyContract {
    /** The database of the subclass; the inbox's tables live in its schema. */
    abstract TestDatabase database();

    static TestDatabase db;

    static HttpServer server;
    static HttpClient client;
    /** Runs the request that stalls in the lease takeover tests. */
    static ExecutorService background;
    static URI base;
    static TxboxTables tables;
    /** A business table: one row per effect of a request, deliberately without a unique key. */
    static String effects;
    static final AtomicInteger calls = new AtomicInteger();
    /** The body cap of {@code /capped}, where keys are optional; it answers the body length it saw. */
    static final int CAP = 1024;
    /** What the application answers next: status code and body. */
    static volatile int nextStatus = 201;
    static volatile CountDownLatch gate = new CountDownLatch(0);
    static volatile CountDownLatch entered = new CountDownLatch(0);

    @BeforeAll
    void start() throws Exception {
        db = database();
        background = Executors.newSingleThreadExecutor();
        tables = TxboxTables.inSchema(db.schema());
        TxboxMigrations.migrate(db.dataSource(), tables);
        effects = db.qualified(db.schema(), "effects");
        execute("CREATE TABLE " + effects + " (idempotency_key text NOT NULL, n int NOT NULL)");
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("orders-api"), db.dataSource()).build();

        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/orders", idempotency.forHttpServer(exchange -> {
            int n = calls.incrementAndGet();
            entered.countDown();
            try {
                gate.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = exchange.getRequestBody().readAllBytes();
            byte[] out = ("{\"order\":" + n + ",\"echo\":\"" + new String(body, UTF_8) + "\"}").getBytes(UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.getResponseHeaders().add("Location", "/orders/" + n);
            exchange.getResponseHeaders().add("X-Request-Time", String.valueOf(System.nanoTime()));
            exchange.sendResponseHeaders(nextStatus, out.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(out);
            }
        }));
        HttpIdempotency transactional = HttpIdempotency.builder(keys("orders-api-tx"), db.dataSource()).build();
        server.createContext("/tx-orders", transactional.forHttpServer((tx, exchange) -> {
            int n = calls.incrementAndGet();
            insertEffect(tx, exchange.getRequestHeaders().getFirst("Idempotency-Key"), n);
            byte[] out = ("{\"order\":" + n + "}").getBytes(UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(nextStatus, out.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(out);
            }
        }));
        HttpIdempotency keyOptional = HttpIdempotency.builder(keys("capped-api"), db.dataSource())
                .keyRequired(r -> false).maxBodyBytes(CAP).build();
        server.createContext("/capped", keyOptional.forHttpServer(exchange -> {
            calls.incrementAndGet();
            byte[] out = String.valueOf(exchange.getRequestBody().readAllBytes().length).getBytes(UTF_8);
            exchange.sendResponseHeaders(200, out.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(out);
            }
        }));
        server.start();
        base = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    void stop() {
        server.stop(0);
        background.shutdownNow();
    }

    @BeforeEach
    void reset() {
        calls.set(0);
        nextStatus = 201;
        gate = new CountDownLatch(0);
        entered = new CountDownLatch(0);
    }

    private static HttpResponse<byte[]> post(String path, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Test
    void missingKey_is400ProblemAndNothingRuns() throws Exception {
        HttpResponse<byte[]> r = post("/orders", null, "{}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(new String(r.body(), UTF_8)).contains("\"status\":400").contains("requires an Idempotency-Key");
        assertThat(calls).hasValue(0);
    }

    @Test
    void malformedKey_is400Problem() throws Exception {
        HttpResponse<byte[]> r = post("/orders", "x".repeat(300), "{}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(new String(r.body(), UTF_8)).contains("more than the limit of 255");
        assertThat(calls).hasValue(0);
    }

    @Test
    void completedRequest_isReplayedByteForByteWithStoredStatusAndHeaders() throws Exception {
        HttpResponse<byte[]> first = post("/orders", "key-replay", "apple");
        HttpResponse<byte[]> again = post("/orders", "key-replay", "apple");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.statusCode()).isEqualTo(201);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(again.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(again.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(again.headers().firstValue("X-Request-Time")).isEmpty(); // not a replayed header
        assertThat(calls).hasValue(1);
    }

    @Test
    void replay_carriesIdempotentReplayedHeader_firstResponseDoesNot() throws Exception {
        HttpResponse<byte[]> first = post("/orders", "key-marker", "apple");
        HttpResponse<byte[]> again = post("/orders", "key-marker", "apple");
        HttpResponse<byte[]> txFirst = post("/tx-orders", "key-marker", "apple");
        HttpResponse<byte[]> txAgain = post("/tx-orders", "key-marker", "apple");

        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(txFirst.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(txAgain.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(calls).hasValue(2);
    }

    @Test
    void sameKeyStillInFlight_is409() throws Exception {
        gate = new CountDownLatch(1);
        entered = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> slow = CompletableFuture.supplyAsync(() -> {
            try {
                return post("/orders", "key-busy", "pear");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        HttpResponse<byte[]> concurrent = post("/orders", "key-busy", "pear");
        gate.countDown();

        assertThat(concurrent.statusCode()).isEqualTo(409);
        assertThat(new String(concurrent.body(), UTF_8)).contains("still being processed");
        assertThat(slow.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        assertThat(calls).hasValue(1);
    }

    @Test
    void sameKeyDifferentBody_is422() throws Exception {
        post("/orders", "key-body", "apple");
        HttpResponse<byte[]> r = post("/orders", "key-body", "banana");
        assertThat(r.statusCode()).isEqualTo(422);
        assertThat(new String(r.body(), UTF_8)).contains("different request");
        assertThat(calls).hasValue(1);
    }

    @Test
    void sameKeyDifferentPath_is422() throws Exception {
        post("/orders/a", "key-path", "apple");
        HttpResponse<byte[]> r = post("/orders/b", "key-path", "apple");
        assertThat(r.statusCode()).isEqualTo(422);
    }

    @Test
    void sameKeyDifferentMethod_is422() throws Exception {
        post("/orders", "key-method", "");
        HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(base.resolve("/orders"))
                .PUT(HttpRequest.BodyPublishers.ofString("")).header("Idempotency-Key", "key-method").build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).isEqualTo(422);
    }

    @Test
    void serverError_isNotCachedSoRetryRunsAgain() throws Exception {
        nextStatus = 503;
        assertThat(post("/orders", "key-5xx", "apple").statusCode()).isEqualTo(503);
        nextStatus = 201;
        HttpResponse<byte[]> retry = post("/orders", "key-5xx", "apple");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(calls).hasValue(2);
    }

    @Test
    void clientError_isCachedAndReplayed() throws Exception {
        nextStatus = 402;
        HttpResponse<byte[]> first = post("/orders", "key-4xx", "apple");
        nextStatus = 201;
        HttpResponse<byte[]> again = post("/orders", "key-4xx", "apple");
        assertThat(first.statusCode()).isEqualTo(402);
        assertThat(again.statusCode()).isEqualTo(402);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(calls).hasValue(1);
    }

    @Test
    void handle_frameworkNeutral_exceptionIs500AndNotCached() {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("neutral"), db.dataSource()).build();
        HttpRequestData request = new HttpRequestData("POST", "/pay",
                Map.of("idempotency-key", List.of("n-1")), "x".getBytes(UTF_8));

        HttpResponseData failed = idempotency.handle(request, r -> {
            throw new IllegalStateException("db password is hunter2");
        });
        HttpResponseData ok = idempotency.handle(request, r -> HttpResponseData.of(200, "text/plain", "paid"));
        HttpResponseData replay = idempotency.handle(request, r -> HttpResponseData.of(200, "text/plain", "twice"));

        assertThat(failed.status()).isEqualTo(500);
        assertThat(new String(failed.body(), UTF_8)).doesNotContain("hunter2");
        assertThat(ok.status()).isEqualTo(200);
        assertThat(replay.body()).asString(UTF_8).isEqualTo("paid");
        assertThat(replay.header("content-type")).isEqualTo("text/plain");
        assertThat(replay.header(HttpIdempotency.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(ok.header(HttpIdempotency.REPLAYED_HEADER)).isNull();
    }

    @Test
    void handle_keyOptionalForSomeRequests_runsWithoutIdempotency() {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("optional"), db.dataSource())
                .keyRequired(r -> !r.method().equals("GET"))
                .build();
        HttpRequestData get = new HttpRequestData("GET", "/orders/1", Map.of(), null);
        assertThat(idempotency.handle(get, r -> HttpResponseData.of(200, "text/plain", "order")).status())
                .isEqualTo(200);
    }

    @Test
    void handle_bodyOverCap_is413() {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("capped"), db.dataSource()).maxBodyBytes(10).build();
        HttpRequestData big = new HttpRequestData("POST", "/x", Map.of("Idempotency-Key", List.of("big")),
                new byte[11]);
        assertThat(idempotency.handle(big, r -> HttpResponseData.of(200, "text/plain", "no")).status())
                .isEqualTo(413);
    }

    @Test
    void handle_responseOverMaxBodyBytes_isStoredAndReplayedWhole() {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("big-answer"), db.dataSource()).maxBodyBytes(10).build();
        HttpRequestData request = new HttpRequestData("POST", "/x", Map.of("Idempotency-Key", List.of("answer-1")),
                new byte[10]);
        String answer = "a receipt of more than ten bytes";
        assertThat(idempotency.handle(request, r -> HttpResponseData.of(200, "text/plain", answer)).body())
                .asString(UTF_8).isEqualTo(answer);
        HttpResponseData replay = idempotency.handle(request, r -> HttpResponseData.of(200, "text/plain", "twice"));
        assertThat(replay.header(HttpIdempotency.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(replay.body()).asString(UTF_8).isEqualTo(answer);
    }

    // ---- attempts: 5xx answers never lock a key ----

    /**
     * Five 5xx answers, then one run that outlives its lease: the next request takes the key
     * over and runs, as the draft promises for a retry after a 5xx. With the defaults, and with
     * a configured limit, which counts only runs that outlived their lease: 5xx answers release
     * the key.
     */
    @ParameterizedTest(name = "maxAttempts {0}")
    @ValueSource(ints = {HttpIdempotency.NO_ATTEMPT_LIMIT, 2})
    void handle_fiveServerErrorsThenLeaseOutlived_retryStillRuns(int maxAttempts) throws Exception {
        String consumer = "attempts-" + maxAttempts;
        Inbox keys = keys(consumer, b -> b.lease(Duration.ofMillis(300)).maxAttempts(maxAttempts));
        HttpIdempotency idempotency = HttpIdempotency.builder(keys, db.dataSource()).build();
        HttpRequestData request = request("attempts-1");
        for (int i = 0; i < 5; i++) {
            assertThat(idempotency.handle(request, r -> HttpResponseData.of(503, "text/plain", "busy")).status())
                    .isEqualTo(503);
        }
        CountDownLatch resume = new CountDownLatch(1);
        Future<HttpResponseData> stalled = stallPastLease(background, consumer, request, resume,
                h -> idempotency.handle(request, h));

        HttpResponseData retry = idempotency.handle(request, r -> HttpResponseData.of(201, "text/plain", "ran"));
        resume.countDown();
        stalled.get(10, TimeUnit.SECONDS);
        HttpResponseData replay = idempotency.handle(request, r -> {
            throw new AssertionError("a completed key must not run again");
        });

        assertThat(retry.status()).isEqualTo(201);
        assertThat(retry.body()).asString(UTF_8).isEqualTo("ran");
        assertThat(replay.body()).asString(UTF_8).isEqualTo("ran");
        assertThat(replay.header(HttpIdempotency.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(keys.listDead(db.dataSource(), 10)).isEmpty();
    }

    @Test
    void handle_transactional_manyServerErrorsThenLeaseOutlived_retryStillRuns() throws Exception {
        HttpIdempotency idempotency = shortLease("attempts-tx");
        HttpRequestData request = request("attempts-2");
        for (int i = 0; i < 12; i++) {
            assertThat(idempotency.handle(request, (tx, r) -> HttpResponseData.of(500, "text/plain", "no")).status())
                    .isEqualTo(500);
        }
        CountDownLatch resume = new CountDownLatch(1);
        Future<HttpResponseData> stalled = stallPastLease(background, "attempts-tx", request, resume,
                h -> idempotency.handle(request, (tx, r) -> h.handle(r)));

        HttpResponseData retry = idempotency.handle(request, (tx, r) -> {
            insertEffect(tx, "attempts-2", 1);
            return HttpResponseData.of(201, "text/plain", "ran");
        });
        resume.countDown();

        assertThat(retry.status()).isEqualTo(201);
        assertThat(stalled.get(10, TimeUnit.SECONDS).status()).isEqualTo(409);
        assertThat(effectNumbers("attempts-2")).isEqualTo("1");
    }

    /**
     * With a configured limit, a key whose runs outlived their lease that many times is DEAD:
     * the next request and every later one get 500 without running, until an operator resets it.
     */
    @Test
    void handle_maxAttemptsConfigured_keyIsDeadAfterThatManyRunsOutlivedTheirLease() throws Exception {
        Inbox keys = keys("attempts-limit", b -> b.lease(Duration.ofMillis(300)).maxAttempts(2));
        HttpIdempotency idempotency = HttpIdempotency.builder(keys, db.dataSource()).build();
        HttpRequestData request = request("attempts-3");
        ExecutorService stallers = Executors.newFixedThreadPool(2);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        try {
            for (int i = 0; i < 2; i++) {
                stallPastLease(stallers, "attempts-limit", request, resume, h -> idempotency.handle(request, r -> {
                    runs.incrementAndGet();
                    return h.handle(r);
                }));
            }

            HttpResponseData dead = idempotency.handle(request, r -> {
                throw new AssertionError("a DEAD key must not run");
            });
            HttpResponseData stillDead = idempotency.handle(request, r -> {
                throw new AssertionError("a DEAD key must not run");
            });

            assertThat(dead.status()).isEqualTo(500);
            assertThat(dead.body()).asString(UTF_8).contains("outlived its lease too often");
            assertThat(stillDead.status()).isEqualTo(500);
            assertThat(runs).hasValue(2);
            assertThat(keys.resetDead(db.dataSource(), "attempts-3")).isTrue();
            resume.countDown();
            assertThat(idempotency.handle(request, r -> HttpResponseData.of(201, "text/plain", "ran")).status())
                    .isEqualTo(201);
        } finally {
            resume.countDown();
            stallers.shutdown();
            assertThat(stallers.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    // ---- the body cap, keyed or not ----

    @Test
    void forHttpServer_keyOptional_unkeyedBodyOverCap_is413AndHandlerNeverRuns() throws Exception {
        HttpResponse<byte[]> r = post("/capped", null, "x".repeat(5_000));

        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(new String(r.body(), UTF_8)).contains("larger than the limit of " + CAP + " bytes");
        assertThat(calls).hasValue(0);
    }

    @Test
    void forHttpServer_keyOptional_keyedBodyOverCap_is413AndHandlerNeverRuns() throws Exception {
        HttpResponse<byte[]> r = post("/capped", "capped-keyed", "x".repeat(5_000));

        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(calls).hasValue(0);
    }

    @Test
    void forHttpServer_keyOptional_chunkedBodyOverCapWithoutContentLength_is413() throws Exception {
        HttpResponse<byte[]> unkeyed = postChunked("/capped", null, CAP + 1);
        HttpResponse<byte[]> keyed = postChunked("/capped", "capped-chunked", CAP + 1);

        assertThat(unkeyed.statusCode()).isEqualTo(413);
        assertThat(keyed.statusCode()).isEqualTo(413);
        assertThat(calls).hasValue(0);
    }

    /**
     * A body far over the cap is refused after reading cap + 1 bytes; the client, still sending
     * or done sending, gets the 413 rather than a reset connection.
     */
    @Test
    void forHttpServer_bodyFarOverCap_clientReads413NotAReset() throws Exception {
        for (int round = 0; round < 3; round++) {
            for (int size : new int[] {100_000, 3_000_000}) {
                byte[] body = new byte[size];
                HttpResponse<byte[]> fixed = client.send(HttpRequest.newBuilder(base.resolve("/capped"))
                        .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
                HttpResponse<byte[]> chunked = postChunked("/capped", null, size);

                assertThat(fixed.statusCode()).as("%d bytes with Content-Length", size).isEqualTo(413);
                assertThat(chunked.statusCode()).as("%d bytes chunked", size).isEqualTo(413);
            }
        }
        assertThat(calls).hasValue(0);
    }

    @Test
    void forHttpServer_keyOptional_chunkedBodyAtCap_reachesHandlerWhole() throws Exception {
        HttpResponse<byte[]> unkeyed = postChunked("/capped", null, CAP);
        HttpResponse<byte[]> keyed = postChunked("/capped", "capped-at-cap", CAP);

        assertThat(unkeyed.statusCode()).isEqualTo(200);
        assertThat(new String(unkeyed.body(), UTF_8)).isEqualTo(String.valueOf(CAP));
        assertThat(keyed.statusCode()).isEqualTo(200);
        assertThat(new String(keyed.body(), UTF_8)).isEqualTo(String.valueOf(CAP));
        assertThat(calls).hasValue(2);
    }

    @Test
    void handle_transactional_unkeyedBodyOverCap_is413AndNothingRuns() {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("tx-capped"), db.dataSource())
                .keyRequired(r -> false).maxBodyBytes(10).build();
        HttpRequestData big = new HttpRequestData("POST", "/x", Map.of(), new byte[11]);

        HttpResponseData r = idempotency.handle(big, (tx, req) -> {
            throw new AssertionError("a body over the cap must not reach the handler");
        });

        assertThat(r.status()).isEqualTo(413);
    }

    // ---- the key as an RFC 8941 sf-string ----

    @Test
    void forHttpServer_quotedAndBareKey_areTheSameKey() throws Exception {
        HttpResponse<byte[]> quoted = post("/orders", "\"sf-1\"", "apple");
        HttpResponse<byte[]> bare = post("/orders", "sf-1", "apple");
        HttpResponse<byte[]> quotedAgain = post("/orders", "\"sf-1\"", "apple");

        assertThat(quoted.statusCode()).isEqualTo(201);
        assertThat(bare.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(bare.body()).isEqualTo(quoted.body());
        assertThat(quotedAgain.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(calls).hasValue(1);
        assertThat(storedKeys("orders-api", "sf-1%")).containsExactly("sf-1");
    }

    @Test
    void forHttpServer_quotedKeyWithEscapes_isTheUnescapedBareKey() throws Exception {
        HttpResponse<byte[]> bare = post("/orders", "sf-2 \"a\\b\"", "apple");
        HttpResponse<byte[]> quoted = post("/orders", "\"sf-2 \\\"a\\\\b\\\"\"", "apple");

        assertThat(bare.statusCode()).isEqualTo(201);
        assertThat(quoted.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(calls).hasValue(1);
    }

    @Test
    void forHttpServer_malformedQuotedKey_is400NamingTheProblem() throws Exception {
        HttpResponse<byte[]> unterminated = post("/orders", "\"sf-3", "apple");
        HttpResponse<byte[]> badEscape = post("/orders", "\"sf-\\3\"", "apple");
        HttpResponse<byte[]> trailing = post("/orders", "\"sf-3\";x=1", "apple");

        assertThat(unterminated.statusCode()).isEqualTo(400);
        assertThat(new String(unterminated.body(), UTF_8)).contains("no closing quote");
        assertThat(badEscape.statusCode()).isEqualTo(400);
        assertThat(new String(badEscape.body(), UTF_8)).contains("a backslash may only escape");
        assertThat(trailing.statusCode()).isEqualTo(400);
        assertThat(new String(trailing.body(), UTF_8)).contains("after the closing quote");
        assertThat(calls).hasValue(0);
        assertThat(storedKeys("orders-api", "%sf-3%")).isEmpty();
    }

    @Test
    void handle_quotedKeyWithNonAscii_is400NamingTheCharacter() {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("sf-ascii"), db.dataSource()).build();
        HttpRequestData request = new HttpRequestData("POST", "/x",
                Map.of("Idempotency-Key", List.of("\"caf\u00e9\"")), new byte[0]);

        HttpResponseData r = idempotency.handle(request, req -> {
            throw new AssertionError("a malformed key must not run");
        });

        assertThat(r.status()).isEqualTo(400);
        assertThat(r.body()).asString(UTF_8).contains("printable ASCII").contains("U+00E9");
    }

    // ---- handlers with database effects: the transactional form ----

    @Test
    void forHttpServer_transactional_writesAndStoredResponseCommitTogether() throws Exception {
        HttpResponse<byte[]> first = post("/tx-orders", "tx-1", "apple");
        HttpResponse<byte[]> again = post("/tx-orders", "tx-1", "apple");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.statusCode()).isEqualTo(201);
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(effectsOf("tx-1")).isEqualTo(1);
        assertThat(calls).hasValue(1);
    }

    @Test
    void forHttpServer_transactional_serverErrorRollsBackWritesAndRunsAgain() throws Exception {
        nextStatus = 503;
        assertThat(post("/tx-orders", "tx-5xx", "apple").statusCode()).isEqualTo(503);
        assertThat(effectsOf("tx-5xx")).isZero();

        nextStatus = 201;
        assertThat(post("/tx-orders", "tx-5xx", "apple").statusCode()).isEqualTo(201);
        assertThat(effectsOf("tx-5xx")).isEqualTo(1);
        assertThat(calls).hasValue(2);
    }

    /**
     * Why the transactional form exists: a plain handler commits its own writes, and if the
     * request then stalls past its lease (or the process dies before the response is stored), a
     * retry with the same key runs it again. Both runs' writes stay.
     */
    @Test
    void handle_plainHandlerWithOwnCommit_takeoverAfterBusinessCommit_appliesTwice() throws Exception {
        HttpIdempotency idempotency = shortLease("plain-crash");
        HttpRequestData request = request("crash-plain");
        CountDownLatch resume = new CountDownLatch(1);

        // "crashed" after its commit: the response is not stored
        Future<HttpResponseData> stalled = stallPastLease(background, "plain-crash", request, resume,
                h -> idempotency.handle(request, r -> {
                    try (Connection c = db.dataSource().getConnection()) {
                        insertEffect(c, "crash-plain", 1); // auto-commit: committed here
                    }
                    return h.handle(r);
                }));

        HttpResponseData retry = idempotency.handle(request, r -> {
            try (Connection c = db.dataSource().getConnection()) {
                insertEffect(c, "crash-plain", 2);
            }
            return HttpResponseData.of(201, "text/plain", "second");
        });
        resume.countDown();
        stalled.get(10, TimeUnit.SECONDS);

        assertThat(retry.status()).isEqualTo(201);
        assertThat(effectsOf("crash-plain")).isEqualTo(2); // the double effect
    }

    /**
     * The same stall with the transactional form: the late request's completion is fenced off,
     * its transaction rolls back with its writes, and it answers 409. One effect in the end.
     */
    @Test
    void handle_transactional_takeoverBeforeCompletion_rollsBackLateRequestSoOneEffect() throws Exception {
        HttpIdempotency idempotency = shortLease("tx-crash");
        HttpRequestData request = request("crash-tx");
        CountDownLatch resume = new CountDownLatch(1);

        Future<HttpResponseData> stalled = stallPastLease(background, "tx-crash", request, resume,
                h -> idempotency.handle(request, (tx, r) -> {
                    insertEffect(tx, "crash-tx", 1);
                    return h.handle(r);
                }));

        HttpResponseData retry = idempotency.handle(request, (tx, r) -> {
            insertEffect(tx, "crash-tx", 2);
            return HttpResponseData.of(201, "text/plain", "second");
        });
        resume.countDown();
        HttpResponseData late = stalled.get(10, TimeUnit.SECONDS);
        HttpResponseData replay = idempotency.handle(request, (tx, r) -> {
            throw new AssertionError("a completed key must not run again");
        });

        assertThat(retry.status()).isEqualTo(201);
        assertThat(late.status()).isEqualTo(409);
        assertThat(late.body()).asString(UTF_8).contains("taken over by a retry");
        assertThat(replay.body()).asString(UTF_8).isEqualTo("second");
        assertThat(replay.header(HttpIdempotency.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(effectsOf("crash-tx")).isEqualTo(1);
        assertThat(effectNumbers("crash-tx")).isEqualTo("2");
    }

    /**
     * A crash after the handler's writes but before the commit, simulated by killing the
     * transaction's server connection: nothing commits, and the retry runs the request once.
     */
    @Test
    void handle_transactional_connectionDiesBeforeCommit_noEffectAndRetryRunsOnce() throws Exception {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("tx-dies"), db.dataSource()).build();
        HttpRequestData request = request("dies-tx");

        HttpResponseData died = idempotency.handle(request, (tx, r) -> {
            insertEffect(tx, "dies-tx", 1);
            terminateBackendOf(tx);
            return HttpResponseData.of(201, "text/plain", "first");
        });
        assertThat(effectsOf("dies-tx")).isZero();

        HttpResponseData retry = idempotency.handle(request, (tx, r) -> {
            insertEffect(tx, "dies-tx", 2);
            return HttpResponseData.of(201, "text/plain", "second");
        });

        assertThat(died.status()).isEqualTo(503);
        assertThat(died.header("Retry-After")).isEqualTo("1");
        assertThat(retry.status()).isEqualTo(201);
        assertThat(effectNumbers("dies-tx")).isEqualTo("2");
    }

    @Test
    void handle_transactional_exceptionRollsBackWritesAndIsNotCached() throws Exception {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("tx-throws"), db.dataSource()).build();
        HttpRequestData request = request("throws-tx");

        HttpResponseData failed = idempotency.handle(request, (tx, r) -> {
            insertEffect(tx, "throws-tx", 1);
            throw new IllegalStateException("boom");
        });
        HttpResponseData ok = idempotency.handle(request, (tx, r) -> {
            insertEffect(tx, "throws-tx", 2);
            return HttpResponseData.of(200, "text/plain", "ok");
        });

        assertThat(failed.status()).isEqualTo(500);
        assertThat(ok.status()).isEqualTo(200);
        assertThat(effectNumbers("throws-tx")).isEqualTo("2");
    }

    @Test
    void handle_transactional_keyOptional_runsAndCommitsWithoutEntry() throws Exception {
        HttpIdempotency idempotency = HttpIdempotency.builder(keys("tx-optional"), db.dataSource())
                .keyRequired(r -> false).build();
        HttpRequestData keyless = new HttpRequestData("POST", "/orders", Map.of(), "x".getBytes(UTF_8));

        HttpResponseData r = idempotency.handle(keyless, (tx, req) -> {
            assertThat(tx.getAutoCommit()).isFalse();
            insertEffect(tx, "keyless", 1);
            return HttpResponseData.of(201, "text/plain", "ok");
        });

        assertThat(r.status()).isEqualTo(201);
        assertThat(effectsOf("keyless")).isEqualTo(1);
    }

    /** A POST whose body of {@code size} bytes is sent chunked, without {@code Content-Length}. */
    private static HttpResponse<byte[]> postChunked(String path, String key, int size) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(new byte[size])));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** The stored message keys of {@code consumer} matching the SQL LIKE {@code pattern}. */
    private static List<String> storedKeys(String consumer, String pattern) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("select message_key from " + db.qualified(db.schema(), tables.inboxTable())
                        + " where consumer = ? and message_key like ? order by message_key")) {
            ps.setString(1, consumer);
            ps.setString(2, pattern);
            List<String> keys = new java.util.ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getString(1));
                }
            }
            return keys;
        }
    }

    private static HttpIdempotency shortLease(String consumer) {
        return HttpIdempotency.builder(keys(consumer, b -> b.lease(Duration.ofMillis(300))), db.dataSource()).build();
    }

    /** The database inbox that keeps the keys of {@code consumer}, as an HTTP helper needs it. */
    private static Inbox keys(String consumer) {
        return keys(consumer, b -> b);
    }

    private static Inbox keys(String consumer, UnaryOperator<Inbox.Builder> options) {
        return options.apply(Inbox.builder(consumer).tables(tables).fingerprint(HttpIdempotency.fingerprint())
                .maxAttempts(HttpIdempotency.NO_ATTEMPT_LIMIT)).build();
    }

    private static HttpRequestData request(String key) {
        return new HttpRequestData("POST", "/orders", Map.of("Idempotency-Key", List.of(key)), "x".getBytes(UTF_8));
    }

    /**
     * Starts {@code request} on {@code on}, passing {@code handle} a handler that holds the
     * request until {@code resume} opens and then answers 201; returns once the request's lease
     * has run out, with the request still held.
     */
    private static Future<HttpResponseData> stallPastLease(ExecutorService on, String consumer,
            HttpRequestData request, CountDownLatch resume, Function<HttpIdempotency.RequestHandler, HttpResponseData> handle)
            throws InterruptedException {
        CountDownLatch held = new CountDownLatch(1);
        Future<HttpResponseData> stalled = on.submit(() -> handle.apply(r -> {
            held.countDown();
            resume.await(10, TimeUnit.SECONDS);
            return HttpResponseData.of(201, "text/plain", "late");
        }));
        assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
        awaitLeaseExpired(consumer, request.header("Idempotency-Key"));
        return stalled;
    }

    /** Polls the database clock, which the lease follows, until the key's lease has run out. */
    private static void awaitLeaseExpired(String consumer, String key) {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(25)).until(() -> {
            try (Connection c = db.dataSource().getConnection();
                    PreparedStatement ps = c.prepareStatement("select lease_until < " + (db.kind() == TestDatabase.Kind.POSTGRESQL ? "clock_timestamp()" : "now(6)") + " from "
                            + db.qualified(db.schema(), tables.inboxTable()) + " where consumer = ? and message_key = ?")) {
                ps.setString(1, consumer);
                ps.setString(2, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && rs.getBoolean(1);
                }
            }
        });
    }

    private static void insertEffect(Connection c, String key, int n) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + effects + " VALUES (?, ?)")) {
            ps.setString(1, key);
            ps.setInt(2, n);
            ps.executeUpdate();
        }
    }

    private static void terminateBackendOf(Connection victim) throws SQLException {
        boolean pg = db.kind() == TestDatabase.Kind.POSTGRESQL;
        long id;
        try (Statement s = victim.createStatement();
                ResultSet rs = s.executeQuery(pg ? "select pg_backend_pid()" : "select connection_id()")) {
            rs.next();
            id = rs.getLong(1);
        }
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            // PostgreSQL waits until the backend is gone, so the next statement on the victim fails;
            // MariaDB's KILL returns once the connection is marked killed, which has the same effect
            s.execute(pg ? "select pg_terminate_backend(" + id + ", 10000)" : "KILL CONNECTION " + id);
        }
    }

    private static long effectsOf(String key) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("select count(*) from " + effects + " where idempotency_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** The run numbers that left an effect for {@code key}, comma-separated in order. */
    private static String effectNumbers(String key) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement((db.kind() == TestDatabase.Kind.POSTGRESQL
                        ? "select coalesce(string_agg(n::text, ',' order by n), '') from "
                        : "select coalesce(group_concat(n order by n separator ','), '') from ")
                        + effects + " where idempotency_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    private static void execute(String sql) throws SQLException {
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
