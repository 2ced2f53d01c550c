package io.txbox.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestRedis;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class RedisStoreIT {
    @RegisterExtension
    static final TestRedis REDIS = TestRedis.perClass();

    private final List<RedisStore> stores = new ArrayList<>();

    @AfterEach
    void close() {
        stores.forEach(RedisStore::close);
    }

    private RedisStore.Builder builder(String consumer) {
        return RedisStore.builder(consumer).redisUrl(REDIS.url()).keyPrefix(REDIS.prefix());
    }

    private RedisStore store(RedisStore.Builder b) {
        RedisStore s = b.build();
        stores.add(s);
        return s;
    }

    private static InboundMessage msg(String key, String payload) {
        return InboundMessage.of(key, payload.getBytes(UTF_8));
    }

    @Test
    void claim_newKey_acquiredWithALeaseOnTheRedisClock() {
        RedisStore store = store(builder("acquire").lease(Duration.ofSeconds(10)));
        List<String> time = REDIS.commands().time();
        Instant redisNow = Instant.ofEpochSecond(Long.parseLong(time.get(0)), Long.parseLong(time.get(1)) * 1000);

        Claim claim = store.claim(msg("k1", "p"));

        assertThat(claim.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(claim.fencingToken()).isPositive();
        assertThat(claim.leaseUntil()).isBetween(redisNow.plusSeconds(9), redisNow.plusSeconds(12));
        assertThat(store.claim(msg("k1", "p")).status()).isEqualTo(Claim.Status.IN_FLIGHT);
    }

    @Test
    void claim_32ConcurrentClaimsOfOneKey_exactlyOneAcquires() throws Exception {
        RedisStore store = store(builder("race"));
        ExecutorService pool = Executors.newFixedThreadPool(32);
        try {
            for (int round = 0; round < 20; round++) {
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
    void claim_sameKeyOtherPayload_refusedWithTheInboxKeyReuseException() {
        RedisStore store = store(builder("reuse"));
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
        RedisStore store = store(builder("replay"));
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
        RedisStore store = store(builder("null-result"));
        store.complete(store.claim(msg("n-1", "p")), null);

        Claim dup = store.claim(msg("n-1", "p"));
        assertThat(dup.status()).isEqualTo(Claim.Status.DUPLICATE);
        assertThat(dup.result()).isNull();
    }

    @Test
    void fail_maxAttemptsTimes_deadWithTheLastError_andReleasesDoNotCount() {
        RedisStore store = store(builder("dead").maxAttempts(3));
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

        assertThat(store.resetDead("d-1", null)).isTrue();
        assertThat(store.claim(msg("d-1", "p")).status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(store.resetDead("d-1", null)).isFalse();
    }

    @Test
    void leaseExpiry_nextClaimTakesOverWithAHigherToken_andTheLateWorkerIsFenced() {
        RedisStore store = store(builder("fence").lease(Duration.ofMillis(300)));
        Claim late = store.claim(msg("f-1", "p"));

        Claim takeover = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> store.claim(msg("f-1", "p")), Claim::acquired);

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
        RedisStore store = store(builder("crashing").lease(Duration.ofMillis(100)).maxAttempts(1));
        store.claim(msg("c-1", "p"));

        Claim dead = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> store.claim(msg("c-1", "p")), c -> c.status() != Claim.Status.IN_FLIGHT);

        assertThat(dead.status()).isEqualTo(Claim.Status.DEAD);
        assertThat(dead.reason()).contains("lease expired on attempt 1 of 1");
    }

    @Test
    void retention_entryExpires_keyIsNewAgain_andTheFencingTokenStillGrows() {
        RedisStore store = store(builder("ttl").retention(Duration.ofSeconds(1)));
        Claim first = store.claim(msg("t-1", "p"));
        store.complete(first, "r".getBytes(UTF_8));
        String redisKey = REDIS.prefix() + "store|ttl|k|t-1";
        assertThat(REDIS.commands().pttl(redisKey)).isBetween(1L, 1000L);

        await().atMost(Duration.ofSeconds(10)).until(() -> REDIS.commands().exists(redisKey) == 0);
        Claim again = store.claim(msg("t-1", "other payload is fine after retention"));

        assertThat(again.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(again.fencingToken()).isGreaterThan(first.fencingToken());
        assertThatThrownBy(() -> store.complete(first, null)).isInstanceOf(LeaseLostException.class);
    }

    @Test
    void retention_shorterThanTheLease_aHeldEntryLivesForItsLease_thenForRetentionAfterItsLastChange() {
        RedisStore store = store(builder("ttl-lease").retention(Duration.ofSeconds(1)).lease(Duration.ofSeconds(30)));
        String redisKey = REDIS.prefix() + "store|ttl-lease|k|held";

        Claim held = store.claim(msg("held", "p"));
        assertThat(REDIS.commands().pttl(redisKey)).as("while held").isBetween(25_000L, 30_000L);
        store.complete(held, null);
        assertThat(REDIS.commands().pttl(redisKey)).as("once completed").isBetween(1L, 1000L);
    }

    @Test
    void fencingCounter_oneRedisKeyPerConsumer_whateverTheNumberOfKeysSeen() {
        RedisStore store = store(builder("counter").retention(Duration.ofSeconds(1)));
        int last = 0;
        for (int i = 0; i < 50; i++) {
            Claim c = store.claim(msg("once-" + i, "p"));
            store.complete(c, null);
            last = c.fencingToken();
        }
        String fence = REDIS.prefix() + "store|counter|fence";
        await().atMost(Duration.ofSeconds(10)).until(() -> REDIS.commands().keys(REDIS.prefix() + "store|counter|*"),
                keys -> keys.equals(List.of(fence)));

        assertThat(REDIS.commands().pttl(fence)).as("no TTL: tokens must never repeat").isEqualTo(-1L);
        assertThat(store.claim(msg("once-0", "p")).fencingToken()).isEqualTo(last + 1);
    }

    @Test
    void complete_oversizedResult_refusedWithInvalidInputException_andNothingWritten() {
        RedisStore store = store(builder("big").maxResultBytes(1024));
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
    void scriptCacheFlushed_callsStillWork_byTheirSource() {
        RedisStore store = store(builder("noscript"));
        Claim claim = store.claim(msg("s-1", "p"));

        REDIS.commands().scriptFlush();

        store.complete(claim, "ok".getBytes(UTF_8));
        assertThat(store.claim(msg("s-1", "p")).result()).isEqualTo("ok".getBytes(UTF_8));
    }

    @Test
    void tenants_sameKey_twoEntries() {
        RedisStore store = store(builder("tenants"));
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
        RedisStore store = store(builder("corpus"));
        assertThatThrownBy(() -> store.claim(InboundMessage.of(key, new byte[0])))
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining(reason);
        assertThat(REDIS.commands().keys(REDIS.prefix() + "store|corpus|k|*")).isEmpty();
    }

    @Test
    void claim_emojiKeyAndBadTenant() {
        RedisStore store = store(builder("corpus-ok"));
        assertThat(store.claim(msg("order-\uD83C\uDF89-\uD83D\uDE80-1", "p")).acquired()).isTrue();
        assertThatThrownBy(() -> store.claim(InboundMessage.builder("k", new byte[0]).tenant("t\u0000").build()))
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("tenant");
    }

    @Test
    void claim_redisUnreachable_failsFastWithRetryableException() {
        RedisStore store = store(RedisStore.builder("down").redisUrl("redis://127.0.0.1:1")
                .commandTimeout(Duration.ofMillis(200)));
        long start = System.nanoTime();

        assertThatThrownBy(() -> store.claim(msg("x", "p")))
                .isInstanceOf(RetryableException.class)
                .hasMessageContaining("redis store claim for consumer \"down\" key \"x\" failed");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }
}
