package io.txbox.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.inbox.http.HttpIdempotency;
import io.txbox.inbox.http.HttpRequestData;
import io.txbox.inbox.http.HttpResponseData;
import io.txbox.testkit.TestDynamo;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** The HTTP helper on the DynamoDB store: a service whose data lives in DynamoDB. */
class HttpOverDynamoStoreIT {
    @RegisterExtension
    static final TestDynamo DYNAMO = TestDynamo.perClass();

    static DynamoDbClient client;

    @BeforeAll
    static void createTable() {
        client = Clients.of(DYNAMO.endpoint());
        DynamoStore.createTable(client, DYNAMO.table("inbox"));
    }

    @AfterAll
    static void closeClient() {
        client.close();
    }

    private static int runId;
    private DynamoStore store;
    private HttpIdempotency http;
    private final AtomicInteger runs = new AtomicInteger();
    private final ExecutorService background = Executors.newSingleThreadExecutor();

    @BeforeEach
    void build() {
        store = DynamoStore.builder("card-api-" + runId++).client(client).table(DYNAMO.table("inbox"))
                .fingerprint(HttpIdempotency.fingerprint()).build();
        http = HttpIdempotency.builder(store).build();
    }

    @AfterEach
    void close() {
        background.shutdownNow();
    }

    private static HttpRequestData request(String path, String key, String body) {
        return new HttpRequestData("POST", path, Map.of("Idempotency-Key", List.of(key)), body.getBytes(UTF_8));
    }

    private HttpResponseData charge(HttpRequestData request) {
        return http.handle(request, r -> {
            int n = runs.incrementAndGet();
            return new HttpResponseData(201, Map.of("Content-Type", List.of("application/json"),
                    "X-Trace", List.of("t" + n)), ("{\"charge\":" + n + "}").getBytes(UTF_8));
        });
    }

    @Test
    void sameKeyTwice_runsOnce_andTheRetryGetsTheStoredResponse() {
        HttpResponseData first = charge(request("/charges", "c-1", "{\"amount\":5}"));
        HttpResponseData replay = charge(request("/charges", "c-1", "{\"amount\":5}"));

        assertThat(runs).hasValue(1);
        assertThat(first.status()).isEqualTo(201);
        assertThat(first.header(HttpIdempotency.REPLAYED_HEADER)).isNull();
        assertThat(replay.status()).isEqualTo(201);
        assertThat(replay.body()).asString(UTF_8).isEqualTo("{\"charge\":1}");
        assertThat(replay.header("content-type")).isEqualTo("application/json");
        assertThat(replay.header("x-trace")).as("not a replayed header").isNull();
        assertThat(replay.header(HttpIdempotency.REPLAYED_HEADER)).isEqualTo("true");
    }

    @Test
    void sameKeyWhileTheFirstRuns_is409_andTheFirstStillCompletes() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        Future<HttpResponseData> first = background.submit(() -> http.handle(request("/charges", "c-2", "x"), r -> {
            entered.countDown();
            resume.await(10, TimeUnit.SECONDS);
            return HttpResponseData.of(201, "text/plain", "charged");
        }));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        HttpResponseData concurrent = charge(request("/charges", "c-2", "x"));
        resume.countDown();

        assertThat(concurrent.status()).isEqualTo(409);
        assertThat(concurrent.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(first.get(10, TimeUnit.SECONDS).status()).isEqualTo(201);
        assertThat(charge(request("/charges", "c-2", "x")).body()).asString(UTF_8).isEqualTo("charged");
        assertThat(runs).as("neither the 409 nor the replay ran the application").hasValue(0);
    }

    @Test
    void sameKeyForAnotherRequest_is422_andDoesNotRun() {
        charge(request("/charges", "c-3", "{\"amount\":5}"));

        HttpResponseData otherBody = charge(request("/charges", "c-3", "{\"amount\":500}"));
        HttpResponseData otherPath = charge(request("/refunds", "c-3", "{\"amount\":5}"));

        assertThat(otherBody.status()).isEqualTo(422);
        assertThat(otherPath.status()).isEqualTo(422);
        assertThat(otherBody.body()).asString(UTF_8).contains("c-3");
        assertThat(runs).hasValue(1);
    }

    @Test
    void serverError_isNotStored_andARetryRunsAgain() {
        HttpResponseData failed = http.handle(request("/charges", "c-4", "x"),
                r -> HttpResponseData.of(503, "text/plain", "gateway down"));
        HttpResponseData retry = charge(request("/charges", "c-4", "x"));

        assertThat(failed.status()).isEqualTo(503);
        assertThat(retry.status()).isEqualTo(201);
        assertThat(retry.header(HttpIdempotency.REPLAYED_HEADER)).isNull();
        assertThat(runs).hasValue(1);
    }
}
