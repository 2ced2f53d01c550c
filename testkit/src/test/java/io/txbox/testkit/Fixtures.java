package io.txbox.testkit;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

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

  static synchronized EngineExecutionResults run(Class<?> fixture) {
    running = true;
    try {
      return EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture)).execute();
    } finally {
      running = false;
    }
  }
}
