package io.redlock;

/** A failure that may go away if the operation is retried: timeouts, dropped connections. */
public class RedlockTransientException extends RedlockException {
  /**
   * @param node the node concerned (redacted), or {@code null}
   * @param message what went wrong and what to do
   * @param cause the underlying failure, or {@code null}
   */
  public RedlockTransientException(String node, String message, Throwable cause) {
    super(node, message, cause);
  }

  /** See {@link RedlockException#RedlockException(String, String, Throwable, boolean)}. */
  protected RedlockTransientException(
      String node, String message, Throwable cause, boolean writableStackTrace) {
    super(node, message, cause, writableStackTrace);
  }
}
