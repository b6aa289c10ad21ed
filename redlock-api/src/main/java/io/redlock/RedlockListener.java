package io.redlock;

/**
 * Hears what a {@link Redlock} does, for metrics, tracing or logs: register one with {@link
 * RedlockBuilder#listener(RedlockListener)}. Every method has an empty default, so an
 * implementation overrides only what it needs. A Redlock without a listener does no extra work.
 *
 * <p>Methods are called on the thread that did the work (a caller's, or one of the library's),
 * synchronously: they must be quick, must not block, and should not throw (a listener that throws
 * is logged and otherwise ignored). Resource names can be anything the application locks, so do not
 * turn them into metric tags unless they are known to be few.
 */
public interface RedlockListener {
  /** A listener that does nothing: the default. */
  RedlockListener NONE = new RedlockListener() {};

  /** How one call on one node ended. */
  enum Outcome {
    /** The node said yes: acquired, released, extended, raised. */
    YES,
    /** The node said no: held by someone else, or no longer this token's. */
    NO,
    /** No answer within the node timeout. */
    TIMED_OUT,
    /** It could not be asked; a retry may help (a refused connection, say). */
    FAILED,
    /** It could not be asked, and no retry will help (a wrong password, a missing table). */
    MISCONFIGURED
  }

  /**
   * One call on one node ended (late answers to calls that timed out are not reported again).
   *
   * @param node the node's name, redacted
   * @param operation {@code tryAcquire}, {@code tryAcquireFenced}, {@code release}, {@code extend},
   *     {@code raiseFence} or {@code status}
   * @param outcome how it ended
   * @param nanos from the start of the fan-out to the end of this call's wait
   */
  default void nodeCall(String node, String operation, Outcome outcome, long nanos) {}

  /**
   * An acquisition ({@code tryAcquire}, {@code acquire}, async or not) ended.
   *
   * @param resource the resource
   * @param acquired whether it got the lease
   * @param attempts how many attempts it made
   * @param nanos how long it took in all, pauses included
   */
  default void acquisition(String resource, boolean acquired, int attempts, long nanos) {}

  /** An extension ended ({@code extend}, or a keep-alive's renewal). */
  default void extension(String resource, boolean extended) {}

  /** A lease was released. */
  default void released(String resource, ReleaseOutcome outcome) {}

  /** A lease was lost (see {@link Lease#onLost}). */
  default void lost(LeaseLost lost) {}
}
