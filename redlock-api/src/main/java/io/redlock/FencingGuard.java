package io.redlock;

import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The protected resource's side of fencing, for a resource whose writes all pass through this JVM
 * (a file, a cache, a service that is the single writer of some data): remembers, per resource, the
 * highest fencing token ({@link Lease#fencingToken()}) accepted so far and refuses lower ones.
 *
 * <pre>{@code
 * FencingGuard guard = new FencingGuard();          // one per protected store, shared
 * // in the writer, for a request that carries the lease's token:
 * guard.runFenced("invoice-42", token, () -> store.write(invoice));
 * }</pre>
 *
 * <p>A token equal to the highest accepted is accepted again, so one lease may write many times; a
 * lower token means that a newer lease exists and is refused. {@link #runFenced} checks, records
 * and writes under one per-resource lock, so an older holder can never write after a newer one was
 * accepted. {@link #tryAccept} only checks and records, for callers whose write is ordered with it
 * by other means.
 *
 * <p>When the protected data lives in a database, do not check in the client: put the check in the
 * same statement as the write, so the database decides atomically, e.g. PostgreSQL {@code UPDATE
 * invoice SET ..., fence = :token WHERE id = :id AND fence <= :token} (0 rows updated means the
 * token is stale), or a MongoDB {@code updateOne({_id: id, fence: {$lte: token}}, {$set: {...,
 * fence: token}})}. docs/safety.md has the full pattern.
 *
 * <p>Thread-safe. Keeps one small entry per resource it has seen; {@link #forget} drops one.
 */
public final class FencingGuard {

  /** Work that runs only while its fencing token is the newest, see {@link #runFenced}. */
  @FunctionalInterface
  public interface FencedAction<T, E extends Exception> {
    /** Runs with the resource's fence held; must not call back into the same guard. */
    T run() throws E;
  }

  /** The highest token of one resource; its monitor serializes check, record and write. */
  private static final class Slot {
    long highest;
  }

  private final ConcurrentMap<String, Slot> slots = new ConcurrentHashMap<>();

  /** A guard that has accepted nothing yet. */
  public FencingGuard() {}

  /**
   * Accepts {@code token} for {@code resource} if it is at least the highest accepted so far, and
   * records it.
   *
   * @return true if accepted; false if a higher token was accepted before (the token is stale)
   * @throws IllegalArgumentException for an empty resource or a token that is not positive
   */
  public boolean tryAccept(String resource, long token) {
    Slot slot = slot(resource, token);
    synchronized (slot) {
      if (token < slot.highest) {
        return false;
      }
      slot.highest = token;
      return true;
    }
  }

  /**
   * Runs {@code action} if {@code token} is at least the highest accepted for {@code resource},
   * recording it first; check, record and action happen under the resource's lock, so no write with
   * a lower token can run once this one was accepted. The token stays recorded even if the action
   * fails: a newer lease has shown up either way.
   *
   * @return what the action returned
   * @throws StaleFencingTokenException if a higher token was accepted before; the action did not
   *     run
   * @throws IllegalArgumentException for an empty resource or a token that is not positive
   */
  public <T, E extends Exception> T runFenced(
      String resource, long token, FencedAction<T, E> action) throws E {
    Objects.requireNonNull(action, "action must not be null");
    Slot slot = slot(resource, token);
    synchronized (slot) {
      if (token < slot.highest) {
        throw new StaleFencingTokenException(resource, token, slot.highest);
      }
      slot.highest = token;
      return action.run();
    }
  }

  /** The highest token accepted for {@code resource}, or empty if none was. */
  public OptionalLong highestAccepted(String resource) {
    requireResource(resource);
    Slot slot = slots.get(resource);
    if (slot == null) {
      return OptionalLong.empty();
    }
    synchronized (slot) {
      return slot.highest == 0 ? OptionalLong.empty() : OptionalLong.of(slot.highest);
    }
  }

  /**
   * Drops what the guard remembers of {@code resource}, e.g. once it was deleted for good. Do not
   * call it while leases on the resource may still write: a stale holder would be accepted again.
   */
  public void forget(String resource) {
    requireResource(resource);
    slots.remove(resource);
  }

  private Slot slot(String resource, long token) {
    requireResource(resource);
    if (token <= 0) {
      throw new IllegalArgumentException(
          "a fencing token is positive, got " + token + "; pass lease.fencingToken()");
    }
    return slots.computeIfAbsent(resource, r -> new Slot());
  }

  private static void requireResource(String resource) {
    if (resource == null || resource.isEmpty()) {
      throw new IllegalArgumentException("resource must be a non-empty string");
    }
  }

  @Override
  public String toString() {
    return "FencingGuard[" + slots.size() + " resources]";
  }
}
