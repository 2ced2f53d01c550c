package io.txbox.testkit;

/**
 * Thrown when a test service cannot be reached, started or cleaned up. The message names the
 * service, the address that was tried and what to do about it.
 */
public class TestkitException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception with a message for the person running the tests.
   *
   * @param message what failed, where, and how to fix it
   */
  public TestkitException(String message) {
    super(message);
  }

  /**
   * Creates an exception with a message and the underlying failure.
   *
   * @param message what failed, where, and how to fix it
   * @param cause the underlying failure
   */
  public TestkitException(String message, Throwable cause) {
    super(message, cause);
  }
}
