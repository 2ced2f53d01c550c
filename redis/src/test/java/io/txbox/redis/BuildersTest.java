package io.txbox.redis;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.inbox.Inbox;
import java.time.Duration;
import org.junit.jupiter.api.Test;

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
}
