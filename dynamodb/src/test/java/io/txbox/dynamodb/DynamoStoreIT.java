package io.txbox.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.DeadEntry;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestDynamo;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;

/** The DynamoDB store against a real DynamoDB-compatible server (dynalite, started by the testkit). */
class DynamoStoreIT {
    @RegisterExtension
    static final TestDynamo DYNAMO = TestDynamo.perClass();

    static DynamoDbClient client;
    static String table;

    @BeforeAll
    static void createTable() {
        client = Clients.of(DYNAMO.endpoint());
        table = DYNAMO.table("inbox");
        DynamoStore.createTable(client, table);
    }

    @AfterAll
    static void close() {
        client.close();
    }

    private static DynamoStore.Builder builder(String consumer) {
        return DynamoStore.builder(consumer).client(client).table(table);
    }

    private static InboundMessage msg(String key, String payload) {
        return InboundMessage.of(key, payload.getBytes(UTF_8));
    }

    private static Map<String, AttributeValue> item(String pk) {
        return client.getItem(r -> r.tableName(table).key(Map.of("pk", AttributeValue.fromS(pk))).consistentRead(true))
                .item();
    }

    @Test
    void claim_newKey_acquiredWithALeaseOnTheClientClock() {
        MutableClock clock = new MutableClock();
        DynamoStore store = builder("acquire").lease(Duration.ofSeconds(10)).clock(clock).build();

        Claim claim = store.claim(msg("k1", "p"));

        assertThat(claim.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(claim.fencingToken()).isPositive();
        assertThat(claim.leaseUntil()).isEqualTo(clock.instant().plusSeconds(10));
        assertThat(store.claim(msg("k1", "p")).status()).isEqualTo(Claim.Status.IN_FLIGHT);
    }

    @Test
    void claim_32ConcurrentClaimsOfOneKey_exactlyOneAcquires() throws Exception {
        DynamoStore store = builder("race").build();
        ExecutorService pool = Executors.newFixedThreadPool(32);
        try {
            for (int round = 0; round < 10; round++) {
                String key = "race-" + round;
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Claim>> claims = new ArrayList<>();
                for (int t = 0; t < 32; t++) {
                    claims.add(pool.submit((Callable<Claim>) () -> {
                        start.await();
                        return store.claim(msg(key, "same"));
                    }));
                }
                start.countDown();
                int acquired = 0;
                for (Future<Claim> f : claims) {
                    Claim c = f.get();
                    if (c.acquired()) {
                        acquired++;
                    } else {
                        assertThat(c.status()).isEqualTo(Claim.Status.IN_FLIGHT);
                    }
                }
                assertThat(acquired).as("round %d", round).isEqualTo(1);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void concurrentDuplicates_16Threads_oneEffectPerKey_andEveryCopySeesTheResult() throws Exception {
        DynamoStore store = builder("storm").build();
        Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> replays = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                done.add(pool.submit(() -> {
                    for (int k = 0; k < 10; k++) {
                        String key = "storm-" + k;
                        while (true) {
                            Claim c = store.claim(msg(key, "order"));
                            if (c.acquired()) {
                                effects.computeIfAbsent(key, x -> new AtomicInteger()).incrementAndGet();
                                store.complete(c, ("charged " + key).getBytes(UTF_8));
                                break;
                            }
                            if (c.status() == Claim.Status.DUPLICATE) {
                                assertThat(c.result()).isEqualTo(("charged " + key).getBytes(UTF_8));
                                replays.computeIfAbsent(key, x -> new AtomicInteger()).incrementAndGet();
                                break;
                            }
                            Thread.onSpinWait(); // IN_FLIGHT: the owner completes within milliseconds
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(effects).hasSize(10).allSatisfy((k, n) -> assertThat(n.get()).as(k).isEqualTo(1));
        assertThat(replays).allSatisfy((k, n) -> assertThat(n.get()).as(k).isEqualTo(15));
    }

    @Test
    void claim_sameKeyOtherPayload_refusedWithTheInboxKeyReuseException() {
        DynamoStore store = builder("reuse").build();
        Claim claim = store.claim(msg("order-1", "first"));
        store.complete(claim, "done".getBytes(UTF_8));

        assertThatThrownBy(() -> store.claim(msg("order-1", "second")))
                .isInstanceOf(KeyReuseException.class)
                .hasMessageContaining("order-1")
                .satisfies(e -> assertThat(((KeyReuseException) e).consumer()).isEqualTo("reuse"));
        assertThat(store.claim(msg("order-1", "first")).result()).isEqualTo("done".getBytes(UTF_8));
    }

    @Test
    void complete_thenClaim_duplicateReplaysStatusHeadersAndBody() {
        DynamoStore store = builder("replay").build();
        Claim claim = store.claim(msg("http-1", "req"));
        Map<String, List<String>> headers = Map.of("Set-Cookie", List.of("a=1", "b=2"));
        store.complete(claim, 201, headers, "{\"id\":7}".getBytes(UTF_8));

        Claim dup = store.claim(msg("http-1", "req"));

        assertThat(dup.status()).isEqualTo(Claim.Status.DUPLICATE);
        assertThat(dup.resultStatus()).isEqualTo(201);
        assertThat(dup.resultHeaders()).isEqualTo(headers);
        assertThat(dup.result()).isEqualTo("{\"id\":7}".getBytes(UTF_8));
    }

    @Test
    void complete_withNullResult_duplicateHasNoResult() {
        DynamoStore store = builder("null-result").build();
        store.complete(store.claim(msg("n-1", "p")), null);

        Claim dup = store.claim(msg("n-1", "p"));
        assertThat(dup.status()).isEqualTo(Claim.Status.DUPLICATE);
        assertThat(dup.result()).isNull();
    }

    @Test
    void fail_maxAttemptsTimes_deadWithTheLastError_listed_andReleasesDoNotCount() {
        DynamoStore store = builder("dead").maxAttempts(3).build();
        for (int i = 0; i < 5; i++) {
            store.release(store.claim(msg("d-1", "p")));
        }
        Outcome first = store.fail(store.claim(msg("d-1", "p")), new IllegalStateException("gateway said no"));
        Outcome second = store.fail(store.claim(msg("d-1", "p")), new IllegalStateException("gateway said no"));
        Outcome third = store.fail(store.claim(msg("d-1", "p")), new IllegalStateException("gateway said no 3"));

        assertThat(first.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(first.attempts()).isEqualTo(1);
        assertThat(second.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(third.status()).isEqualTo(Outcome.Status.DEAD);
        assertThat(third.attempts()).isEqualTo(3);
        Claim dead = store.claim(msg("d-1", "p"));
        assertThat(dead.status()).isEqualTo(Claim.Status.DEAD);
        assertThat(dead.reason()).contains("gateway said no 3");
        assertThat(item("dead|k|d-1")).doesNotContainKey(DynamoStore.TTL_ATTRIBUTE);

        List<DeadEntry> listed = store.listDead(100);
        assertThat(listed).singleElement().satisfies(e -> {
            assertThat(e.key()).isEqualTo("d-1");
            assertThat(e.attempts()).isEqualTo(3);
            assertThat(e.reason()).contains("gateway said no 3");
        });

        assertThat(store.resetDead("d-1", null)).isTrue();
        assertThat(store.listDead(100)).isEmpty();
        assertThat(store.claim(msg("d-1", "p")).status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(store.resetDead("d-1", null)).isFalse();
    }

    @Test
    void leaseExpiry_nextClaimTakesOverWithAHigherToken_andTheLateWorkerIsFenced() {
        MutableClock clock = new MutableClock();
        DynamoStore store = builder("fence").lease(Duration.ofSeconds(30)).clockSkewMargin(Duration.ofSeconds(2))
                .clock(clock).build();
        Claim late = store.claim(msg("f-1", "p"));

        clock.advance(Duration.ofSeconds(31));
        assertThat(store.claim(msg("f-1", "p")).status()).as("within the skew margin").isEqualTo(Claim.Status.IN_FLIGHT);
        clock.advance(Duration.ofSeconds(2));
        Claim takeover = store.claim(msg("f-1", "p"));

        assertThat(takeover.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(takeover.fencingToken()).isGreaterThan(late.fencingToken());
        assertThatThrownBy(() -> store.complete(late, "late".getBytes(UTF_8)))
                .isInstanceOf(LeaseLostException.class)
                .satisfies(e -> assertThat(((LeaseLostException) e).fencingToken()).isEqualTo(late.fencingToken()));
        assertThatThrownBy(() -> store.fail(late, new RuntimeException("late"))).isInstanceOf(LeaseLostException.class);
        assertThatThrownBy(() -> store.release(late)).isInstanceOf(LeaseLostException.class);
        store.complete(takeover, "new owner".getBytes(UTF_8));
        assertThat(store.claim(msg("f-1", "p")).result()).isEqualTo("new owner".getBytes(UTF_8));
    }

    @Test
    void leaseExpiry_atMaxAttempts_makesTheKeyDead() {
        MutableClock clock = new MutableClock();
        DynamoStore store = builder("crashing").lease(Duration.ofSeconds(1)).clockSkewMargin(Duration.ZERO)
                .maxAttempts(1).clock(clock).build();
        store.claim(msg("c-1", "p"));
        clock.advance(Duration.ofSeconds(2));

        Claim dead = store.claim(msg("c-1", "p"));

        assertThat(dead.status()).isEqualTo(Claim.Status.DEAD);
        assertThat(dead.reason()).contains("lease expired on attempt 1 of 1");
    }

    @Test
    void ttl_setOnEveryEntry_retentionAfterCompletion_noneOnDead() {
        MutableClock clock = new MutableClock();
        DynamoStore store = builder("ttl").retention(Duration.ofHours(2)).lease(Duration.ofSeconds(30))
                .clockSkewMargin(Duration.ofSeconds(2)).clock(clock).build();
        long now = clock.instant().getEpochSecond();

        Claim claim = store.claim(msg("t-1", "p"));
        assertThat(Long.parseLong(item("ttl|k|t-1").get(DynamoStore.TTL_ATTRIBUTE).n()))
                .isEqualTo(now + 2 * 3600 + 32);
        clock.advance(Duration.ofSeconds(5));
        store.complete(claim, "r".getBytes(UTF_8));

        assertThat(Long.parseLong(item("ttl|k|t-1").get(DynamoStore.TTL_ATTRIBUTE).n()))
                .isEqualTo(now + 5 + 2 * 3600);
    }

    @Test
    void entryDeletedByTtl_keyIsNewAgain_andAClaimFromBeforeIsStillFenced() {
        MutableClock clock = new MutableClock();
        DynamoStore store = builder("expired").clock(clock).build();
        Claim before = store.claim(msg("e-1", "p"));
        client.deleteItem(r -> r.tableName(table).key(Map.of("pk", AttributeValue.fromS("expired|k|e-1"))));
        clock.advance(Duration.ofMillis(1));

        Claim again = store.claim(msg("e-1", "other payload is fine after retention"));

        assertThat(again.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(again.fencingToken()).isEqualTo(before.fencingToken());
        assertThatThrownBy(() -> store.complete(before, null)).isInstanceOf(LeaseLostException.class);
        store.complete(again, null);
    }

    @Test
    void complete_oversizedResult_refusedWithInvalidInputException_andNothingWritten() {
        DynamoStore store = builder("big").maxResultBytes(1024).build();
        Claim claim = store.claim(msg("b-1", "p"));

        assertThatThrownBy(() -> store.complete(claim, new byte[1025]))
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("1025 bytes, more than maxResultBytes 1024");
        assertThatThrownBy(() -> store.complete(claim, 200, Map.of(), new byte[2000]))
                .isInstanceOf(InvalidInputException.class);
        assertThat(store.claim(msg("b-1", "p")).status()).isEqualTo(Claim.Status.IN_FLIGHT);
        store.complete(claim, new byte[1024]);
        assertThat(store.claim(msg("b-1", "p")).result()).hasSize(1024);
    }

    @Test
    void complete_bodyAndHeadersPastTheItemLimit_refusedBeforeAnyWrite() {
        DynamoStore store = builder("item-limit").maxResultBytes(DynamoStore.MAX_RESULT_BYTES).build();
        Claim claim = store.claim(msg("i-1", "p"));
        Map<String, List<String>> headers = Map.of("X-Big", List.of("h".repeat(60 * 1024)));

        assertThatThrownBy(() -> store.complete(claim, 200, headers, new byte[DynamoStore.MAX_RESULT_BYTES]))
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("more than DynamoDB's item limit of 409600 bytes");
        assertThat(store.claim(msg("i-1", "p")).status()).isEqualTo(Claim.Status.IN_FLIGHT);

        store.complete(claim, 200, Map.of(), new byte[DynamoStore.MAX_RESULT_BYTES]);
        assertThat(store.claim(msg("i-1", "p")).result()).hasSize(DynamoStore.MAX_RESULT_BYTES);
    }

    @Test
    void tenants_sameKey_threeEntries() {
        DynamoStore store = builder("tenants").build();
        InboundMessage a = InboundMessage.builder("k", "p".getBytes(UTF_8)).tenant("a").build();
        InboundMessage b = InboundMessage.builder("k", "p".getBytes(UTF_8)).tenant("b").build();

        assertThat(store.claim(a).acquired()).isTrue();
        assertThat(store.claim(b).acquired()).isTrue();
        assertThat(store.claim(msg("k", "p")).acquired()).isTrue();
    }

    static Stream<Arguments> badKeys() {
        return Stream.of(
                Arguments.of("null", null, "is missing"),
                Arguments.of("empty", "", "is empty"),
                Arguments.of("10 KiB", "k".repeat(10 * 1024), "more than the limit of 255"),
                Arguments.of("control character", "order\n1", "control character"),
                Arguments.of("lone surrogate", "order-\uD83C", "not valid Unicode"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badKeys")
    void claim_badKey_refusedWithTheInboxMessage_andNothingWritten(String name, String key, String reason) {
        DynamoStore store = builder("corpus").build();
        assertThatThrownBy(() -> store.claim(InboundMessage.of(key, new byte[0])))
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining(reason);
        assertThat(client.scan(r -> r.tableName(table).filterExpression("con = :c")
                .expressionAttributeValues(Map.of(":c", AttributeValue.fromS("corpus")))).items()).isEmpty();
    }

    @Test
    void build_missingTable_failsNamingTheFix() {
        assertThatThrownBy(() -> DynamoStore.builder("c").client(client).table(DYNAMO.table("absent")).build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("does not exist")
                .hasMessageContaining("DynamoStore.createTable(client, \"" + DYNAMO.table("absent") + "\")");
    }

    @Test
    void build_tableWithAnotherKeySchema_failsNamingTheSchemaAndTheFix() {
        String wrong = DYNAMO.table("wrong");
        client.createTable(r -> r.tableName(wrong)
                .keySchema(k -> k.attributeName("id").keyType(KeyType.HASH), k -> k.attributeName("n").keyType(KeyType.RANGE))
                .attributeDefinitions(a -> a.attributeName("id").attributeType(ScalarAttributeType.S),
                        a -> a.attributeName("n").attributeType(ScalarAttributeType.N))
                .provisionedThroughput(p -> p.readCapacityUnits(1L).writeCapacityUnits(1L)));

        assertThatThrownBy(() -> DynamoStore.builder("c").client(client).table(wrong).build())
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("has key schema [id HASH S, n RANGE N]")
                .hasMessageContaining("partition key pk of type S and no sort key")
                .hasMessageContaining("DynamoStore.createTable");
    }

    @Test
    void createTable_twice_leavesTheTableAsItIs() {
        DynamoStore store = builder("again").build();
        store.complete(store.claim(msg("a-1", "p")), "kept".getBytes(UTF_8));

        DynamoStore.createTable(client, table);

        assertThat(store.claim(msg("a-1", "p")).result()).isEqualTo("kept".getBytes(UTF_8));
    }

    @Test
    void build_serverDown_failsFastWithRetryableException() {
        try (DynamoDbClient down = Clients.of(URI.create("http://127.0.0.1:1"))) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> DynamoStore.builder("down").client(down).table(table).build())
                    .isInstanceOf(RetryableException.class)
                    .hasMessageContaining("DynamoDB could not be reached");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
        }
    }

    @Test
    void serverStopsMidRun_callsFailWithRetryableException_andNothingIsReportedDone() {
        TestDynamo.Server server = TestDynamo.startPrivate();
        try (DynamoDbClient own = Clients.of(server.endpoint())) {
            DynamoStore.createTable(own, "inbox");
            DynamoStore store = DynamoStore.builder("stops").client(own).table("inbox").build();
            Claim claim = store.claim(msg("s-1", "p"));
            assertThat(claim.acquired()).isTrue();

            server.close();

            assertThatThrownBy(() -> store.complete(claim, "paid".getBytes(UTF_8)))
                    .isInstanceOf(RetryableException.class)
                    .hasMessageContaining("dynamodb store complete for consumer \"stops\" key \"s-1\" failed")
                    .hasMessageContaining("call it again");
            assertThatThrownBy(() -> store.claim(msg("s-2", "p")))
                    .isInstanceOf(RetryableException.class)
                    .hasMessageContaining("dynamodb store claim for consumer \"stops\" key \"s-2\" failed");
        } finally {
            server.close();
        }
    }
}
