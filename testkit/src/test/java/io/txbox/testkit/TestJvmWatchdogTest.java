package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TestJvmWatchdogTest {

  @Test
  void threadDump_deepStack_printsEveryFrameNotJustTheFirstEight() {
    String dump = recurse(20);

    assertThat(dump).contains("\"" + Thread.currentThread().getName() + "\"");
    assertThat(dump.split("TestJvmWatchdogTest.recurse", -1)).hasSizeGreaterThan(20);
  }

  private static String recurse(int depth) {
    return depth == 0 ? TestJvmWatchdog.threadDump() : recurse(depth - 1);
  }
}
