package io.txbox.testkit;

import java.time.Duration;
import java.util.function.Supplier;

/** Polls a condition until it holds or a deadline passes. Never waits longer than asked. */
final class Poll {
  private Poll() {}

  /** A check that may throw; a throw counts as "not yet". */
  @FunctionalInterface
  interface Check {
    boolean ok() throws Exception;
  }

  /**
   * Returns once {@code check} is true; throws a {@link TestkitException} with {@code message} and
   * the last failure when {@code timeout} passes first.
   */
  static void until(Duration timeout, Duration interval, Check check, Supplier<String> message) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Exception last = null;
    while (true) {
      try {
        if (check.ok()) {
          return;
        }
      } catch (Exception e) {
        last = e;
      }
      if (System.nanoTime() - deadline >= 0) {
        String text = message.get() + (last == null ? "" : " Last error: " + last);
        throw last == null ? new TestkitException(text) : new TestkitException(text, last);
      }
      sleep(interval);
    }
  }

  static void sleep(Duration interval) {
    try {
      Thread.sleep(interval.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TestkitException("Interrupted while waiting", e);
    }
  }
}
