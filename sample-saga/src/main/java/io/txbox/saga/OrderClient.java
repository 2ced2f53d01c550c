package io.txbox.saga;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The demo's customers: place orders over HTTP with an Idempotency-Key each, and, when chaos is
 * on, send some requests again under the same key, right after the answer or twice at once, as
 * clients do after a timeout. A 409 (the first request is still running) or a 5xx is retried
 * with the same key until it gets a real answer.
 *
 * <p>What the client saw is counted from the responses themselves: every successful response
 * beyond the first for a key is a duplicate request answered by a replay, and every answer for a
 * key must name the same order.
 */
final class OrderClient {
    private static final int MAX_ATTEMPTS = 60;

    /** What the client saw. */
    record Stats(int placed, int failed, long duplicateRequests, long conflicts, long retriedErrors,
            long differingAnswers, List<String> acceptedKeys) {}

    private final HttpClient http;
    private final URI ordersUri;
    private final Chaos chaos;
    private final String runId;
    private final AtomicInteger placed = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicLong duplicateRequests = new AtomicLong();
    private final AtomicLong conflicts = new AtomicLong();
    private final AtomicLong retriedErrors = new AtomicLong();
    private final AtomicLong differingAnswers = new AtomicLong();
    private final List<String> acceptedKeys = Collections.synchronizedList(new ArrayList<>());
    /** Sends the second of two concurrent requests. */
    private final ExecutorService twins = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "saga-client-twin");
        t.setDaemon(true);
        return t;
    });

    OrderClient(String baseUri, Chaos chaos, String runId) {
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        this.ordersUri = URI.create(baseUri + "/orders");
        this.chaos = chaos;
        this.runId = runId;
    }

    /** The amount of order {@code i}, in cents: spread so that about 5 % are declined. */
    static long amountCents(int i) {
        return 1_000 + (i * 7_919L) % 90_000;
    }

    int placed() {
        return placed.get();
    }

    long duplicateRequests() {
        return duplicateRequests.get();
    }

    /** Places {@code orders} orders, {@code concurrency} at a time, and returns when all are answered. */
    Stats run(int orders, int concurrency) throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(concurrency, r -> {
            Thread t = new Thread(r, "saga-client");
            t.setDaemon(true);
            return t;
        });
        for (int i = 0; i < orders; i++) {
            int n = i;
            pool.execute(() -> placeOrder(n));
        }
        pool.shutdown();
        if (!pool.awaitTermination(10, TimeUnit.MINUTES)) {
            pool.shutdownNow();
        }
        twins.shutdown();
        return new Stats(placed.get(), failed.get(), duplicateRequests.get(), conflicts.get(), retriedErrors.get(),
                differingAnswers.get(), List.copyOf(acceptedKeys));
    }

    private void placeOrder(int i) {
        String key = "order-" + runId + "-" + i;
        String body = "{\"customer\":\"customer-" + (i % 97) + "\",\"amountCents\":" + amountCents(i) + "}";
        double roll = ThreadLocalRandom.current().nextDouble();
        List<String> answers = new ArrayList<>();
        if (roll < chaos.retryConcurrently()) {
            CompletableFuture<String> twin = CompletableFuture.supplyAsync(() -> send(key, body), twins);
            answers.add(send(key, body));
            answers.add(twin.join());
        } else {
            answers.add(send(key, body));
            if (roll < chaos.retryConcurrently() + chaos.retryAfterResponse()) {
                answers.add(send(key, body));
            }
        }
        List<String> ok = answers.stream().filter(a -> a != null).toList();
        if (ok.isEmpty()) {
            failed.incrementAndGet();
            return;
        }
        placed.incrementAndGet();
        acceptedKeys.add(key);
        duplicateRequests.addAndGet(ok.size() - 1);
        if (ok.stream().distinct().count() > 1) {
            differingAnswers.incrementAndGet();
        }
    }

    /** Sends until a 2xx answer; returns its body, or null if the order could not be placed. */
    private String send(String key, String body) {
        HttpRequest request = HttpRequest.newBuilder(ordersUri)
                .header("Idempotency-Key", key)
                .header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            try {
                HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                int status = response.statusCode();
                if (status == 200 || status == 201) {
                    return response.body();
                }
                if (status == 409) {
                    conflicts.incrementAndGet();
                } else if (status >= 500) {
                    retriedErrors.incrementAndGet();
                } else {
                    return null; // 4xx: this request will never succeed
                }
            } catch (IOException e) {
                retriedErrors.incrementAndGet();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
            sleep(Math.min(500, 10L << Math.min(attempt, 6)));
        }
        return null;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static Map<String, Object> describe(Stats s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("placed", s.placed());
        m.put("failed", s.failed());
        m.put("conflicts_409", s.conflicts());
        m.put("retried_errors", s.retriedErrors());
        m.put("differing_answers", s.differingAnswers());
        return m;
    }
}
