package io.redlock;

/**
 * A failure that a retry will not fix: configuration, authentication, missing schema, a read-only
 * replica. The message says what to change.
 */
public class RedlockNonTransientException extends RedlockException {
  /**
   * @param node the node concerned (redacted), or {@code null}
   * @param message what went wrong and what to change
   * @param cause the underlying failure, or {@code null}
   */
  public RedlockNonTransientException(String node, String message, Throwable cause) {
    super(node, message, cause);
  }
}
