package io.txbox.testkit;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * A hard time limit for a test JVM: once it has run for longer than {@value #TIMEOUT_PROPERTY}
 * seconds, prints a full thread dump and halts the JVM with exit status {@value #EXIT_STATUS}, so
 * a hung test run fails with evidence of where it hung instead of blocking the build.
 *
 * <p>Off unless the system property {@value #TIMEOUT_PROPERTY} is set. Surefire/Failsafe's own
 * {@code forkedProcessTimeoutInSeconds} asks the test JVM to shut down, which a thread that
 * never returns can ignore; a halt cannot be ignored. The dump goes to the JVM's standard error
 * stream, bypassing any capture by the test runner, and to a file {@code thread-dump-<pid>.txt}
 * in the directory {@value #DIR_PROPERTY} (default: the working directory).
 *
 * <p>Registered through {@code META-INF/services} as a JUnit Platform {@link
 * LauncherSessionListener}, so it needs no code in the tests.
 */
public final class TestJvmWatchdog implements LauncherSessionListener {
  /** Seconds after the JVM started at which it is dumped and halted; unset means never. */
  public static final String TIMEOUT_PROPERTY = "txbox.testkit.jvmTimeout";
  /** Directory for the dump file. */
  public static final String DIR_PROPERTY = "txbox.testkit.threadDumpDir";

  /** The exit status of a JVM halted by the watchdog. */
  public static final int EXIT_STATUS = 124;

  private static final AtomicBoolean STARTED = new AtomicBoolean();

  /** Called by the JUnit Platform through the service loader. */
  public TestJvmWatchdog() {}

  @Override
  public void launcherSessionOpened(LauncherSession session) {
    String after = System.getProperty(TIMEOUT_PROPERTY, "").strip();
    if (after.isEmpty() || !STARTED.compareAndSet(false, true)) {
      return;
    }
    Duration limit;
    try {
      limit = Duration.ofSeconds(Long.parseLong(after));
    } catch (NumberFormatException e) {
      throw new TestkitException(TIMEOUT_PROPERTY + " must be a whole number of seconds, was '"
          + after + "'");
    }
    Instant jvmStart = Instant.ofEpochMilli(ManagementFactory.getRuntimeMXBean().getStartTime());
    Instant deadline = jvmStart.plus(limit);
    Thread thread = new Thread(() -> waitThenDump(deadline, limit), "txbox-test-jvm-watchdog");
    thread.setDaemon(true);
    thread.start();
  }

  private static void waitThenDump(Instant deadline, Duration limit) {
    try {
      long millis = Duration.between(Instant.now(), deadline).toMillis();
      if (millis > 0) {
        Thread.sleep(millis);
      }
    } catch (InterruptedException e) {
      return;
    }
    String dump = "txbox-testkit: the test JVM (pid " + ProcessHandle.current().pid()
        + ") has run for more than " + limit.toSeconds() + " s (" + TIMEOUT_PROPERTY
        + "); thread dump:\n" + threadDump();
    Path file = Path.of(System.getProperty(DIR_PROPERTY, "."))
        .resolve("thread-dump-" + ProcessHandle.current().pid() + ".txt");
    String where;
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, dump, StandardCharsets.UTF_8);
      where = "txbox-testkit: thread dump written to " + file.toAbsolutePath();
    } catch (IOException e) {
      where = "txbox-testkit: could not write the thread dump to " + file.toAbsolutePath()
          + ": " + e;
    }
    @SuppressWarnings("resource") // the process's own stderr: must stay open
    PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true,
        StandardCharsets.UTF_8);
    err.println(dump);
    err.println(where);
    err.println("txbox-testkit: halting the test JVM (pid " + ProcessHandle.current().pid()
        + ") with exit status " + EXIT_STATUS);
    err.flush();
    Runtime.getRuntime().halt(EXIT_STATUS);
  }

  /** Every thread with its full stack, held monitors and locks (ThreadInfo.toString cuts at 8). */
  static String threadDump() {
    StringBuilder out = new StringBuilder();
    for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
      out.append('"').append(info.getThreadName()).append("\" id=").append(info.getThreadId())
          .append(info.isDaemon() ? " daemon" : "").append(' ').append(info.getThreadState());
      if (info.getLockName() != null) {
        out.append(" on ").append(info.getLockName());
      }
      if (info.getLockOwnerName() != null) {
        out.append(" owned by \"").append(info.getLockOwnerName()).append('"');
      }
      out.append('\n');
      StackTraceElement[] stack = info.getStackTrace();
      for (int i = 0; i < stack.length; i++) {
        out.append("\tat ").append(stack[i]).append('\n');
        for (MonitorInfo monitor : info.getLockedMonitors()) {
          if (monitor.getLockedStackDepth() == i) {
            out.append("\t- locked ").append(monitor).append('\n');
          }
        }
      }
      for (LockInfo lock : info.getLockedSynchronizers()) {
        out.append("\t- holds ").append(lock).append('\n');
      }
      out.append('\n');
    }
    return out.toString();
  }
}
