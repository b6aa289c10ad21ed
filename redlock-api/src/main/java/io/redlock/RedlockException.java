package io.redlock;

import java.util.Optional;

/**
 * Root of every exception this library throws on purpose.
 *
 * <p>Two subclasses split failures by what a caller can do about them: {@link
 * RedlockTransientException} (a retry may help: a node timed out, a connection dropped) and {@link
 * RedlockNonTransientException} (a retry will not help: bad configuration, wrong password, missing
 * table). Messages name the node they concern, with any password redacted, and say what to do.
 */
public class RedlockException extends RuntimeException {
  private final String node;

  /**
   * @param node the node this failure concerns, in redacted form, or {@code null}
   * @param message what went wrong and what to do about it
   * @param cause the underlying failure, or {@code null}
   */
  public RedlockException(String node, String message, Throwable cause) {
    super(node == null ? message : node + ": " + message, cause);
    this.node = node;
  }

  /**
   * For failures that are part of the normal flow, made often and never read for where they came
   * from (a node that did not answer in time): without a stack trace, which costs more to fill in
   * than the rest of a lock cycle.
   *
   * @param node the node this failure concerns, in redacted form, or {@code null}
   * @param message what went wrong and what to do about it
   * @param cause the underlying failure, or {@code null}
   * @param writableStackTrace false for no stack trace
   */
  protected RedlockException(
      String node, String message, Throwable cause, boolean writableStackTrace) {
    super(node == null ? message : node + ": " + message, cause, true, writableStackTrace);
    this.node = node;
  }

  /** The node this failure concerns (redacted, safe to log), if it concerns one node. */
  public Optional<String> node() {
    return Optional.ofNullable(node);
  }
}
