package io.txbox.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.inbox.Inbox;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class BuildersTest {
    @Test
    void redisStore_badOptions_namedWithTheBadValue() {
        assertThatThrownBy(() -> RedisStore.builder("bad name")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("consumer").hasMessageContaining("bad name");
        assertThatThrownBy(() -> RedisStore.builder("c").maxAttempts(0)).isInstanceOf(ConfigException.class)
                .hasMessage("maxAttempts must be at least 1, but was 0");
        assertThatThrownBy(() -> RedisStore.builder("c").lease(Duration.ZERO)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("lease must be between");
        assertThatThrownBy(() -> RedisStore.builder("c").retention(Duration.ofMillis(10)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("retention must be between");
        assertThatThrownBy(() -> RedisStore.builder("c").maxResultBytes(-1)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("maxResultBytes must be between 0 and 67108864, but was -1");
        assertThatThrownBy(() -> RedisStore.builder("c").keyPrefix("has space")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("keyPrefix").hasMessageContaining("has space");
        assertThatThrownBy(() -> RedisStore.builder("c").redisUrl("nonsense://x").build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("nonsense://x");
    }

    @Test
    void hybridInbox_badOptions_namedWithTheBadValue() {
        Inbox db = Inbox.builder("c").build();
        assertThatThrownBy(() -> HybridInbox.builder(null)).isInstanceOf(ConfigException.class)
                .hasMessage("database must not be null");
        assertThatThrownBy(() -> HybridInbox.builder(db).failureThreshold(0)).isInstanceOf(ConfigException.class)
                .hasMessage("failureThreshold must be between 1 and 1000, but was 0");
        assertThatThrownBy(() -> HybridInbox.builder(db).commandTimeout(Duration.ofMinutes(1)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("commandTimeout must be between");
        assertThatThrownBy(() -> HybridInbox.builder(db).cacheTtl(Duration.ZERO)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("cacheTtl must be between");
        assertThatThrownBy(() -> HybridInbox.builder(db).maxCachedResultBytes(-5)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("but was -5");
    }

    /** URLs Lettuce would read as another server (or refuse only at the first call): refused when set. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "redis://127.0.0.1:notaport | has port \"notaport\", which is not a number from 1 to 65535",
        "redis://127.0.0.1:70000 | has port 70000, which is not from 1 to 65535",
        "rediss://127.0.0.1:65536 | has port 65536, which is not from 1 to 65535",
        "redis://127.0.0.1:0 | has port 0, which is not from 1 to 65535",
        "redis://127.0.0.1:-1 | has port \"-1\", which is not a number",
        "redis://127.0.0.1: | has port \"\", which is not a number",
        "redis://127.0.0.1:6379:6380 | has host \"127.0.0.1:6379\", which is not a valid host name",
        "redis://redis_prod:6379 | has host \"redis_prod\", which is not a valid host name",
        "redis://:6379 | names no host",
        "redis:// | is not a valid URI",
        "redis:/// | names no host",
        "redis:127.0.0.1 | names no host",
        "http://127.0.0.1:6379 | must start with redis:// or rediss://",
        "127.0.0.1:6379 | is not a valid URI",
        "redis://127.0.0.1:6379/abc | has database \"abc\", which is not a number",
        "redis://127.0.0.1:6379/0/1 | has database \"0/1\", which is not a number",
        "'redis://127.0.0.1:6379 ' | is not a valid URI",
        "redis://127.0.0.1 :6379 | is not a valid URI",
        "redis://[::1:6379 | is not a valid URI",
        "redis-sentinel:// | is refused by the Redis client",
    })
    void redisUrl_hostOrPortThatDoesNotParse_refusedWhenSet_byBothBuilders(String url, String problem) {
        Inbox db = Inbox.builder("c").build();
        assertThatThrownBy(() -> RedisStore.builder("c").redisUrl(url)).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("redisUrl ").hasMessageContaining(problem);
        assertThatThrownBy(() -> HybridInbox.builder(db).redisUrl(url)).isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("redisUrl ").hasMessageContaining(problem);
    }

    @ParameterizedTest
    @ValueSource(strings = {"redis://127.0.0.1:6379", "redis://127.0.0.1", "redis://pw@redis.example.com:6380/2",
        "rediss://user:pw@redis.example.com/", "redis://[::1]:6379", "redis://127.0.0.1:6379?timeout=5s",
        "redis-sentinel://pw@h1:26379,h2:26379?sentinelMasterId=main", "redis-socket:///tmp/redis.sock"})
    void redisUrl_wellFormed_accepted(String url) {
        assertThat(RedisStore.builder("c").redisUrl(url)).isNotNull();
        assertThat(HybridInbox.builder(Inbox.builder("c").build()).redisUrl(url)).isNotNull();
    }

    @Test
    void redisUrl_withAPassword_theMessageMasksIt() {
        assertThatThrownBy(() -> RedisStore.builder("c").redisUrl("redis://pa55w0rd-s3cret@127.0.0.1:70000"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("redisUrl \"redis://****@127.0.0.1:70000\" has port 70000")
                .message().doesNotContain("pa55w0rd");
        assertThatThrownBy(() -> HybridInbox.builder(Inbox.builder("c").build())
                .redisUrl("redis://ops:pa55w0rd-s3cret@127.0.0.1:notaport"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("redisUrl \"redis://ops:****@127.0.0.1:notaport\" has port \"notaport\"")
                .message().doesNotContain("pa55w0rd");
        assertThatThrownBy(() -> RedisStore.builder("c").redisUrl("redis://pa55 w0rd@127.0.0.1:6379"))
                .isInstanceOf(ConfigException.class).message().doesNotContain("pa55").doesNotContain("w0rd");
    }
}
