package io.redlock.jdbc.internal;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The wire-protocol connections of one node: at most {@code maxTotal} open, idle ones kept in a
 * slot each, so that lending and taking back an idle one is a compare-and-set without allocation
 * (the design of the Redis backend's pool). A connection idle for longer than {@code maxIdle} is
 * closed instead of reused: a server, proxy or firewall may have dropped it meanwhile.
 */
final class PgWirePool {
  /** Opens a connection. */
  @FunctionalInterface
  interface Opener {
    PgWireConnection open() throws SQLException;
  }

  private final Opener opener;
  private final int maxTotal;
  private final long maxIdleNanos;
  private final AtomicReferenceArray<PgWireConnection> idle;

  /** Connections open, idle or lent, or being opened. */
  private final AtomicInteger open = new AtomicInteger();

  private final AtomicInteger waiters = new AtomicInteger();
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private volatile boolean closed;

  PgWirePool(Opener opener, int maxTotal, Duration maxIdle) {
    this.opener = opener;
    this.maxTotal = maxTotal;
    this.maxIdleNanos = maxIdle.toNanos();
    this.idle = new AtomicReferenceArray<>(maxTotal);
  }

  /** An idle connection, or null; never waits and never does network I/O. */
  PgWireConnection pollIdle() {
    int n = idle.length();
    // threads start at different slots so that they do not all race for the first one
    int start = (int) (Thread.currentThread().getId() % n);
    for (int k = 0; k < n; k++) {
      int i = start + k < n ? start + k : start + k - n;
      PgWireConnection c = idle.get(i);
      if (c != null && idle.compareAndSet(i, c, null)) {
        if (System.nanoTime() - c.idleSince < maxIdleNanos) {
          return c;
        }
        dispose(c);
      }
    }
    return null;
  }

  /**
   * An idle connection, else a new one if fewer than {@code maxTotal} are open (opened on this
   * thread), else the next one given back within {@code maxWait}.
   *
   * @throws SQLTransientConnectionException if all stayed busy for {@code maxWait}
   * @throws SQLException if opening one failed
   * @throws IllegalStateException if the pool is closed
   */
  PgWireConnection borrow(Duration maxWait) throws SQLException {
    long deadline = System.nanoTime() + maxWait.toNanos();
    while (true) {
      if (closed) {
        throw new IllegalStateException("the node is closed");
      }
      PgWireConnection c = pollIdle();
      if (c != null) {
        return c;
      }
      if (reserve()) {
        try {
          return opener.open();
        } catch (SQLException | RuntimeException | Error e) {
          open.decrementAndGet();
          signal();
          throw e;
        }
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new SQLTransientConnectionException(
            "all "
                + maxTotal
                + " connections stayed busy for "
                + maxWait.toMillis()
                + " ms (raise redlock.poolSize)",
            "08001");
      }
      lock.lock();
      waiters.incrementAndGet();
      try {
        if (open.get() >= maxTotal && !closed && !anyIdle()) {
          changed.awaitNanos(left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SQLTransientConnectionException("interrupted waiting for a connection", "08001");
      } finally {
        waiters.decrementAndGet();
        lock.unlock();
      }
    }
  }

  /** Opens one connection and keeps it idle, if fewer than {@code maxTotal} are open. */
  void addIdle() throws SQLException {
    if (!closed && reserve()) {
      PgWireConnection c;
      try {
        c = opener.open();
      } catch (SQLException | RuntimeException | Error e) {
        open.decrementAndGet();
        signal();
        throw e;
      }
      giveBack(c);
    }
  }

  private boolean anyIdle() {
    for (int i = 0; i < idle.length(); i++) {
      if (idle.get(i) != null) {
        return true;
      }
    }
    return false;
  }

  /** Takes back a healthy connection whose last answer was read whole. */
  void giveBack(PgWireConnection c) {
    if (closed) {
      dispose(c);
      return;
    }
    c.idleSince = System.nanoTime();
    int n = idle.length();
    int start = (int) (Thread.currentThread().getId() % n);
    for (int k = 0; k < n; k++) {
      int i = start + k < n ? start + k : start + k - n;
      if (idle.get(i) == null && idle.compareAndSet(i, null, c)) {
        if (closed && idle.compareAndSet(i, c, null)) {
          dispose(c); // raced with close(), which may have emptied the slots before this one
          return;
        }
        signal();
        return;
      }
    }
    dispose(c); // cannot happen: there is a slot for every connection that may be open
  }

  /** Closes a lent connection whose state is unknown or broken. */
  void discard(PgWireConnection c) {
    dispose(c);
  }

  private void dispose(PgWireConnection c) {
    c.close();
    open.decrementAndGet();
    signal();
  }

  /** Closes the idle connections (after a failure they are likely stale too). */
  void clear() {
    for (int i = 0; i < idle.length(); i++) {
      PgWireConnection c = idle.getAndSet(i, null);
      if (c != null) {
        dispose(c);
      }
    }
  }

  /** Connections open now, idle or lent. */
  int open() {
    return open.get();
  }

  /** Closes the idle connections now, and lent ones when they come back. Idempotent. */
  void close() {
    closed = true;
    clear();
    signal();
  }

  private boolean reserve() {
    while (true) {
      int n = open.get();
      if (n >= maxTotal) {
        return false;
      }
      if (open.compareAndSet(n, n + 1)) {
        return true;
      }
    }
  }

  private void signal() {
    if (waiters.get() > 0) {
      lock.lock();
      try {
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }
}
