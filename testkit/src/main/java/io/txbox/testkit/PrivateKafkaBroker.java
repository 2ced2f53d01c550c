package io.txbox.testkit;

import java.nio.file.Path;

/**
 * A broker that belongs to one test, for fault tests: stop it, kill it, restart it on the same
 * ports with the same data. Clients keep using the same {@link #bootstrapServers()} across
 * restarts.
 *
 * <p>{@link #close()} kills the broker and deletes its data. A broker that is never closed is
 * killed when the test JVM exits.
 */
public interface PrivateKafkaBroker extends KafkaBroker, AutoCloseable {

  /** Shuts the broker down cleanly (SIGTERM) and waits for it; kills it after 30 s. */
  void stop();

  /** Kills the broker (SIGKILL), as a crash would, and waits until the process is gone. */
  void kill();

  /**
   * Starts the broker again on the same ports with the same data, stopping it first if it runs,
   * and waits until it answers.
   *
   * @throws TestkitException if it does not start; the message holds the log's end
   */
  void restart();

  /** Returns whether the broker process is alive. */
  boolean isRunning();

  /** Returns the broker's log file, which also receives the JVM's stdout and stderr. */
  Path logFile();

  /** Kills the broker and deletes its directory. Safe to call twice. */
  @Override
  void close();
}
