package io.redlock;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * What one node of a {@link Redlock} looks like from this client, at the moment {@link
 * Redlock#health()} was called: a snapshot for dashboards, health checks and logs.
 *
 * <p>A node is {@link State#DOWN} after {@value #FAILURES_TO_DOWN} calls in a row failed (timed
 * out, refused, or answered an error) and {@link State#UP} again as soon as it answers one call, a
 * late answer to an abandoned call included. The engine keeps sending every call to every node in
 * either state, so a node that comes back is used at once; the state is for people. Each change of
 * state is logged once: at WARN when the node goes down, with the cause, and at INFO when it is
 * back.
 *
 * @param node the node's name, redacted (safe to print)
 * @param state whether the node answers
 * @param lastError the last failure's message (redacted), or empty if no call has failed since the
 *     node last answered
 * @param callsInFlight calls started on the node and not yet ended: awaited, or abandoned by the
 *     engine and still waiting for a late answer. Many while the node is down means calls pile up
 * @param sinceLastAnswer time since the node last answered a call (on this JVM's ticker), or empty
 *     if it never has
 */
public record NodeHealth(
    String node,
    State state,
    Optional<String> lastError,
    int callsInFlight,
    Optional<Duration> sinceLastAnswer) {

  /** Failed calls in a row after which a node counts as down. */
  public static final int FAILURES_TO_DOWN = 3;

  /** Validates. */
  public NodeHealth {
    Objects.requireNonNull(node, "node");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(lastError, "lastError");
    Objects.requireNonNull(sinceLastAnswer, "sinceLastAnswer");
    if (callsInFlight < 0) {
      throw new IllegalArgumentException("callsInFlight must be >= 0, got " + callsInFlight);
    }
  }

  /** A node's state as this client sees it. */
  public enum State {
    /** No call has ended yet. */
    UNKNOWN,
    /**
     * The node answered its last call, or fewer than {@value NodeHealth#FAILURES_TO_DOWN} failed
     * since.
     */
    UP,
    /** The last {@value NodeHealth#FAILURES_TO_DOWN} or more calls failed, with no answer since. */
    DOWN
  }

  @Override
  public String toString() {
    return node
        + " "
        + state
        + ", "
        + callsInFlight
        + " in flight"
        + sinceLastAnswer.map(d -> ", last answer " + d.toMillis() + " ms ago").orElse("")
        + lastError.map(e -> ", last error: " + e).orElse("");
  }
}
