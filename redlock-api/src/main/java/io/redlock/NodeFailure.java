package io.redlock;

import java.util.Objects;

/**
 * One node's failure in a call of a {@link Redlock}: which node, and why.
 *
 * @param node the node's name, redacted (safe to print)
 * @param cause what went wrong; its message says what to do
 */
public record NodeFailure(String node, RuntimeException cause) {
  /** Validates. */
  public NodeFailure {
    Objects.requireNonNull(node, "node");
    Objects.requireNonNull(cause, "cause");
  }

  /**
   * Whether a retry may help (a timeout, a refused connection), as opposed to a failure that needs
   * a change of configuration (a wrong password, a missing table): {@link
   * RedlockNonTransientException}.
   */
  public boolean isTransient() {
    return !(cause instanceof RedlockNonTransientException);
  }

  @Override
  public String toString() {
    String message = cause.getMessage();
    if (message == null) {
      message = cause.getClass().getSimpleName();
    }
    // A RedlockException's message starts with the node's name already.
    return message.startsWith(node) ? message : node + ": " + message;
  }
}
