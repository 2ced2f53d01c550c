package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

class TestRedisIT {
  @RegisterExtension
  static final TestRedis REDIS = TestRedis.perClass();

  static final List<String> fixturePrefixes = new CopyOnWriteArrayList<>();

  @Test
  void eachClass_getsItsOwnPrefix_andItsKeysAreDeletedAfterIt_othersUntouched() {
    String mine = REDIS.prefix() + "kept";
    REDIS.commands().set(mine, "1");

    Fixtures.run(WritingFixture.class);
    Fixtures.run(WritingFixture.class);

    assertThat(fixturePrefixes).hasSize(2).doesNotHaveDuplicates().noneMatch(p -> p.equals(REDIS.prefix()));
    for (String p : fixturePrefixes) {
      assertThat(p).startsWith("txbox-test:writingfixture-");
      assertThat(REDIS.commands().keys(p + "*")).as("keys of %s after its class", p).isEmpty();
    }
    assertThat(REDIS.commands().get(mine)).isEqualTo("1");
  }

  @Test
  void deleteAll_deletesOnlyThisPrefix() {
    REDIS.commands().set(REDIS.prefix() + "a", "1");
    REDIS.commands().hset(REDIS.prefix() + "b", "f", "v");
    REDIS.commands().set("txbox-test-other:" + REDIS.prefix(), "keep");
    try {
      assertThat(REDIS.deleteAll()).isGreaterThanOrEqualTo(2);
      assertThat(REDIS.commands().keys(REDIS.prefix() + "*")).isEmpty();
      assertThat(REDIS.commands().get("txbox-test-other:" + REDIS.prefix())).isEqualTo("keep");
    } finally {
      REDIS.commands().del("txbox-test-other:" + REDIS.prefix());
    }
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class WritingFixture {
    @RegisterExtension
    static final TestRedis FIXTURE_REDIS = TestRedis.perClass();

    @Test
    void writes() {
      fixturePrefixes.add(FIXTURE_REDIS.prefix());
      for (int i = 0; i < 1500; i++) {
        FIXTURE_REDIS.commands().set(FIXTURE_REDIS.prefix() + i, "v");
      }
    }
  }
}
