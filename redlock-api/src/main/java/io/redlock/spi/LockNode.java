package io.redlock.spi;

import java.time.Duration;

/**
 * One lock node: a single store that can hold keys with an expiry. It knows nothing of quorums or
 * other nodes; the engine builds Redlock on top of many of these.
 *
 * <h2>Contract</h2>
 *
 * <ul>
 *   <li><b>Server clock.</b> Expiry is computed by the store's own clock from a relative TTL. A key
 *       whose expiry has passed counts as absent everywhere, even if not yet garbage-collected.
 *   <li><b>Atomicity.</b> Each operation is one atomic step on the store: among any number of
 *       concurrent {@code tryAcquire} calls for an absent key, from any number of clients, exactly
 *       one acquires.
 *   <li><b>Answers vs failures.</b> "Held by someone else" is an answer ({@code acquired=false});
 *       "could not ask" (I/O, timeout, authentication, missing schema) is an exception from {@link
 *       Reply#await}: a {@link io.redlock.RedlockTransientException} if a retry may help, else a
 *       {@link io.redlock.RedlockNonTransientException}. Never {@code false} for a failure.
 *   <li><b>Input.</b> Keys and tokens are non-empty strings of any Unicode content except NUL
 *       (U+0000, which PostgreSQL text cannot hold) up to at least 1 KiB; a TTL must be positive
 *       and at least {@link NodeCapabilities#ttlPrecision()}. Invalid input throws {@link
 *       IllegalArgumentException} from the method itself (not from the reply); {@link
 *       LockNodeArguments} has the shared checks and messages.
 *   <li><b>Multiplexing.</b> Each method starts the operation and returns at once with a {@link
 *       Reply}; the engine starts the call on every node first and then awaits the replies. A
 *       method may write to a socket but must not wait for the store's answer, so that one thread
 *       can fan out to many nodes. Backends built on blocking drivers hand the call to an executor
 *       ({@link io.redlock.spi.support.Replies#supplyAsync}).
 *   <li><b>Thread safety.</b> Every method may be called from many threads at once.
 * </ul>
 *
 * <p>The compatibility kit ({@code io.redlock:redlock-tck}) checks all of this against a real
 * store.
 */
public interface LockNode extends AutoCloseable {

  /**
   * A short description of the node for messages and logs, e.g. {@code redis://10.0.0.5:6379/0}.
   * Must never contain a password or other secret.
   */
  String name();

  /** What this node can do; constant for the node's lifetime. */
  NodeCapabilities capabilities();

  /**
   * Conditional insert with expiry: sets {@code key -> token} expiring {@code ttl} from now on the
   * store's clock, unless the key exists and has not expired.
   *
   * @return a reply: {@link AcquireResult#acquired()} true if this call set the key
   * @throws IllegalArgumentException for an empty key or token or an unusable TTL
   */
  Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl);

  /**
   * Compare-and-delete: deletes {@code key} only if it holds {@code token}.
   *
   * @return a reply: true if the key held this token and was deleted
   * @throws IllegalArgumentException for an empty key or token
   */
  Reply<Boolean> release(String key, String token);

  /**
   * Compare-and-extend: if {@code key} holds {@code token} and has not expired, sets its expiry to
   * {@code ttl} from now on the store's clock.
   *
   * @return a reply: true if the expiry was moved
   * @throws IllegalArgumentException for an empty key or token or an unusable TTL
   */
  Reply<Boolean> extend(String key, String token, Duration ttl);

  /**
   * Conditional insert with expiry that also increments the key's fencing counter: like {@link
   * #tryAcquire}, and if this call set the key, atomically with it, the key's counter (which
   * survives release and expiry) is incremented and returned in {@link AcquireResult#fence()}. Only
   * called on nodes whose {@link NodeCapabilities#fencing()} is true.
   *
   * <p>The counter never goes backwards: every value returned is greater than every value this node
   * returned or was raised to ({@link #raiseFence}) for the key before. A store that can lose the
   * counter (a restart without persistence, eviction) must start again from a floor that cannot be
   * below a value it handed out, e.g. {@code max(counter + 1, server time in µs)}. Values need not
   * be consecutive. The key itself is stored exactly as {@link #tryAcquire} stores it: the counter
   * lives beside it, and a plain {@code tryAcquire} neither reads nor changes it.
   *
   * @throws IllegalArgumentException for an empty key or token or an unusable TTL
   */
  default Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    return unsupported(
        "this node does not keep fencing counters (capabilities().fencing() is false)");
  }

  /**
   * Atomically: if {@code key} still holds {@code token} (and has not expired), raises its fencing
   * counter to at least {@code atLeast}. Only called on nodes whose {@link
   * NodeCapabilities#fencing()} is true. The engine calls it on every node that granted an
   * acquisition, with the maximum of their counters, so that any later majority meets the highest
   * value. It changes neither the key's token nor its expiry, and never lowers the counter.
   *
   * @return a reply: true if the key held the token (the counter is now at least {@code atLeast})
   * @throws IllegalArgumentException for an empty key or token or a non-positive value
   */
  default Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    return unsupported(
        "this node does not keep fencing counters (capabilities().fencing() is false)");
  }

  /**
   * Reports the store's incarnation, uptime and durability. Only called on nodes whose {@link
   * NodeCapabilities#status()} is true.
   *
   * <p>With restart quarantine on, the engine calls this after awaiting every "acquired" or
   * "extended" answer from the node, to decide whether that vote counts. Two requirements follow:
   *
   * <ul>
   *   <li><b>Fresh.</b> A status obtained after awaiting a reply must describe the incarnation that
   *       produced that reply, or a later one: never the incarnation from before a restart once the
   *       restarted store has answered. Asking the store each time satisfies this; so does a cache
   *       that is updated whenever the node opens a connection, because a restart breaks every
   *       connection (so do not put a proxy that keeps client connections across server restarts
   *       between the node and the store).
   *   <li><b>Cheap.</b> It is on the acquisition's path: answer from such a cache when possible.
   * </ul>
   *
   * <p>Incarnations never repeat; the uptime may be rounded down (never up).
   *
   * @throws IllegalStateException if the node is closed
   */
  default Reply<NodeStatus> status() {
    return unsupported(
        "this node does not implement status(); declare capabilities().status() only if it"
            + " does (a node that wraps another must forward status())");
  }

  /**
   * Reads the store's own clock: the wall-clock time at which the store handled this call, by the
   * clock it computes expiries with. Only called on nodes whose {@link NodeCapabilities#clock()} is
   * true.
   *
   * <p><b>For diagnostics only.</b> The engine never uses absolute time: Redlock sends relative
   * TTLs and each store times them with its own clock, so clocks only need to advance at about the
   * same <em>rate</em>; they need not agree on the time of day. A store whose clock is far from the
   * client's is still a warning sign, because an NTP daemon that later <em>steps</em> it (rather
   * than slewing it) moves every expiry on that store at once. {@code redlock doctor} shows each
   * store's offset from this machine from this method.
   *
   * <p><b>Fresh.</b> Every call reads the store's clock anew, on the store: never a cached or
   * extrapolated value (unlike {@link #status()}, which may be cached per connection). The read
   * happens between the call's start and its answer, so a caller that times both with its own wall
   * clock can estimate the offset as {@code serverTime - (start + end) / 2}, give or take half the
   * round trip (as NTP does).
   *
   * <p>Resolution, by backend of this project: Redis {@code TIME}, 1 µs; PostgreSQL {@code
   * clock_timestamp()}, 1 µs; MariaDB/MySQL {@code UTC_TIMESTAMP(6)}, 1 µs; H2 {@code
   * CURRENT_TIMESTAMP(9)}, the clock of the JVM running the database (this JVM when in-process),
   * usually 1 µs; SQLite {@code julianday('now')}, 1 ms, always this machine's clock (SQLite runs
   * in the client's process); MongoDB {@code hello.localTime}, 1 ms.
   *
   * @return a reply: the store's current time as a true {@link java.time.Instant} (whatever the
   *     store's or session's time zone)
   * @throws IllegalStateException if the node is closed
   */
  default Reply<java.time.Instant> serverTime() {
    return unsupported(
        "this node does not read its store's clock (capabilities().clock() is false)");
  }

  /**
   * Who holds {@code key} on this node, and for how long: for operators ({@code redlock status},
   * {@code redlock unlock --force}), never for the engine's decisions. Only called on nodes whose
   * {@link NodeCapabilities#inspection()} is true.
   *
   * <p>An expired entry that the store still keeps counts as free, as it does for {@link
   * #tryAcquire}. The remaining TTL is read from the store's own clock and may be rounded to the
   * node's {@link NodeCapabilities#ttlPrecision()}.
   *
   * @return a reply: the holder, or empty if the key is free
   * @throws IllegalArgumentException for an empty or over-long key
   * @throws IllegalStateException if the node is closed
   */
  default Reply<java.util.Optional<KeyHolder>> inspect(String key) {
    return unsupported(
        "this node cannot look up a key's holder (capabilities().inspection() is false)");
  }

  /**
   * Asks to be told when {@code key} is released or deleted on this node's store, by any client of
   * the store, so that a waiter can try again at once instead of at its next poll. Only called on
   * nodes whose {@link NodeCapabilities#releaseNotifications()} is true.
   *
   * <p>Best effort: a notification may be late, lost (e.g. while a connection is re-established) or
   * spurious, and an expiry need not be reported at all; the engine keeps polling with random
   * pauses as a fallback. The node calls {@code listener} on a thread of its own, and the listener
   * returns at once (it must not block the node). A node should also call the listener whenever it
   * may have missed notifications (e.g. after it subscribed again), since a spurious call costs
   * only one early retry.
   *
   * <p>Registration must be cheap and must not wait for the store: a node may start listening
   * lazily and in the background.
   *
   * @return a handle whose {@code close()} stops the notifications
   * @throws IllegalArgumentException for an empty key
   * @throws IllegalStateException if the node is closed
   */
  default ReleaseSubscription onRelease(String key, Runnable listener) {
    throw new IllegalStateException(
        name()
            + " does not push release notifications"
            + " (capabilities().releaseNotifications() is false); do not call onRelease on it");
  }

  /**
   * Releases the node's connections. Idempotent. Calls made after close throw {@link
   * IllegalStateException} naming the node.
   */
  @Override
  void close();

  /** The failed reply of an optional method this node does not implement; {@code why} says so. */
  private <T> Reply<T> unsupported(String why) {
    return Reply.failed(new io.redlock.RedlockNonTransientException(name(), why, null));
  }
}
