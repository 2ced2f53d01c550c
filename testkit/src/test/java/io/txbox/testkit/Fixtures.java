package io.txbox.testkit;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * Runs fixture classes through the real JUnit lifecycle. Fixtures are annotated
 * {@code @EnabledIf("io.txbox.testkit.Fixtures#running")} so they never run on their own.
 */
final class Fixtures {
  private static volatile boolean running;

  private Fixtures() {}

  static boolean running() {
    return running;
  }

  /**
   * A loopback port nothing listens on (bound, then released). Fixtures take theirs in their own
   * static initializer: surefire also loads a fixture class on its own, as a (skipped) test class,
   * so a value handed in from outside could arrive after the fixture's fields were set.
   */
  static int closedPort() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static synchronized EngineExecutionResults run(Class<?> fixture) {
    running = true;
    try {
      return EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture)).execute();
    } finally {
      running = false;
    }
  }
}
