package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedWithFailure;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.instanceOf;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.message;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

class TestRedisTest {
  static volatile int closedPort;

  @Test
  void unreachableServer_failsClassQuicklyNamingServiceAddressAndFix() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = socket.getLocalPort();
    }
    long start = System.nanoTime();

    var results = Fixtures.run(UnreachableFixture.class);

    Duration took = Duration.ofNanos(System.nanoTime() - start);
    results.containerEvents().assertThatEvents().haveExactly(1, event(finishedWithFailure(
        instanceOf(TestkitException.class),
        message(m -> m.contains("Redis at redis://127.0.0.1:" + closedPort)
            && m.contains("redis-server --daemonize yes") && m.contains("TXBOX_TEST_REDIS_URL")))));
    assertThat(took).isLessThan(Duration.ofSeconds(5));
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class UnreachableFixture {
    @RegisterExtension
    static final TestRedis REDIS = TestRedis.perClass("redis://127.0.0.1:" + closedPort);

    @Test
    void neverRuns() {}
  }
}
