package io.txbox.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboxListener;
import io.txbox.testkit.NullArguments;
import io.txbox.testkit.TestRedis;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every public method of the Redis module refuses a null argument with a txbox exception naming
 * the parameter; the connection and data source given beside it fail the test if touched.
 */
class NullArgumentsIT {
    @RegisterExtension
    static final TestRedis REDIS = TestRedis.perClass();

    private static final InboundMessage MESSAGE = InboundMessage.of("k", new byte[] {1});

    static Object sample(Class<?> type) {
        Map<Class<?>, Object> samples = new HashMap<>();
        samples.put(Connection.class, NullArguments.untouchable(Connection.class));
        samples.put(DataSource.class, NullArguments.untouchable(DataSource.class));
        samples.put(InboundMessage.class, MESSAGE);
        samples.put(Claim.class, Claim.of("c", "k", null, Claim.Status.ACQUIRED, 1, Instant.EPOCH, null, null, null, null));
        samples.put(Handler.class, (Handler) (tx, m) -> null);
        samples.put(java.util.function.Predicate.class, (java.util.function.Predicate<Object>) o -> true);
        samples.put(Throwable.class, new RuntimeException("boom"));
        samples.put(String.class, "x");
        samples.put(byte[].class, new byte[0]);
        samples.put(Map.class, Map.of());
        samples.put(List.class, List.of());
        samples.put(Duration.class, Duration.ofSeconds(1));
        samples.put(Instant.class, Instant.EPOCH);
        samples.put(Integer.class, 200);
        samples.put(Clock.class, Clock.systemUTC());
        samples.put(Fingerprint.class, Fingerprint.sha256());
        samples.put(InboxListener.class, InboxListener.NONE);
        samples.put(RedisListener.class, RedisListener.NONE);
        samples.put(Function.class, Function.identity());
        return samples.get(type);
    }

    @Test
    void redisApi_nullArgument_isRefusedNamingTheParameter() {
        try (RedisStore store = RedisStore.builder("c").redisUrl(REDIS.url()).keyPrefix(REDIS.prefix()).build();
                HybridInbox hybrid = HybridInbox.builder(Inbox.builder("c").build()).redisUrl(REDIS.url())
                        .keyPrefix(REDIS.prefix()).build()) {
            NullArguments check = NullArguments.expecting(TxboxException.class, NullArgumentsIT::sample, Set.of())
                    .methods(RedisStore.class, store)
                    .methods(RedisStore.Builder.class, RedisStore.builder("c"))
                    .methods(HybridInbox.class, hybrid)
                    .methods(HybridInbox.Builder.class, HybridInbox.builder(Inbox.builder("c").build()));
            assertThat(check.problems()).isEmpty();
            assertThat(check.checked()).isGreaterThanOrEqualTo(30);
        }
    }
}
