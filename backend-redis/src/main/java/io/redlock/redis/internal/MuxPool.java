package io.redlock.redis.internal;

import java.time.Duration;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionFactory;

/**
 * The connections of one node: at most {@code maxTotal} open, idle ones kept in a slot each, and
 * the calls waiting for one ({@link #await}), served in order as connections come back or open.
 *
 * <p>Taking and returning an idle connection is a compare-and-set on a slot and a counter update,
 * with no allocation. This replaces Jedis's commons-pool2 pool, whose bookkeeping on every borrow
 * and return (wall-clock timestamps, statistics, an identity map, a locked deque) was about a
 * quarter of a lock cycle's CPU on the caller's thread, for features a lock node does not use.
 *
 * <p>A connection idle for longer than {@code maxIdle} is closed instead of reused, as the
 * commons-pool2 evictor used to do: a server, proxy or firewall may have dropped it meanwhile. A
 * connection that died sooner is found when a command is written to it or its reply read, and the
 * node then {@link #clear()}s the idle ones.
 */
final class MuxPool {
  private final ConnectionFactory factory;
  private final int maxTotal;
  private final long maxIdleNanos;

  /** Idle connections, one slot for each connection that may be open. */
  private final AtomicReferenceArray<MuxConnection> idle;

  /** Connections open, idle or lent out, or being opened. */
  private final AtomicInteger open = new AtomicInteger();

  /** How many slots of {@link #idle} are filled. */
  private final AtomicInteger idleCount = new AtomicInteger();

  /**
   * Connections lent out: counted where they are handed out and taken back, so that a connection
   * being opened to be kept idle ({@link #addIdle}) never counts as lent.
   */
  private final AtomicInteger lent = new AtomicInteger();

  /** Borrowers waiting for a connection to come back or a slot to free up. */
  private final AtomicInteger waiters = new AtomicInteger();

  /**
   * Calls waiting for a connection, in order. A waiter that no longer wants one (its call was
   * dropped) is skipped when its turn comes.
   */
  private final ConcurrentLinkedQueue<Waiter> waiting = new ConcurrentLinkedQueue<>();

  /** How many entries {@link #waiting} holds (read without walking the queue). */
  private final AtomicInteger waitingCount = new AtomicInteger();

  /** Most calls that may wait at once; beyond them a call fails at once (the node is stalled). */
  private final int maxWaiting;

  /** Opens connections for waiting calls, off the callers' threads. */
  private final Executor opener;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private volatile boolean closed;

  /** A call waiting for a connection ({@link #await}). */
  interface Waiter {
    /**
     * Takes {@code connection} for its call (sends on it): true if it did, and then owns it; false
     * if it no longer wants one (dropped), and the connection goes to the next waiter.
     */
    boolean serve(MuxConnection connection);

    /**
     * No connection could be had for the call: it fails with {@code failure}. False if it no longer
     * wanted one (dropped), so the failure is for the next waiter.
     */
    boolean fail(Exception failure);
  }

  MuxPool(
      ConnectionFactory factory, int maxTotal, Duration maxIdle, int maxWaiting, Executor opener) {
    this.factory = factory;
    this.maxTotal = maxTotal;
    this.maxWaiting = maxWaiting;
    this.opener = opener;
    this.maxIdleNanos = maxIdle.toNanos();
    this.idle = new AtomicReferenceArray<>(maxTotal);
  }

  /**
   * Lends an idle connection, or answers null if none is idle; never waits and never does network
   * I/O. Give it back with {@link #giveBack} or {@link #discard}.
   */
  MuxConnection pollIdle() {
    MuxConnection c = takeIdle();
    if (c != null) {
      lent.incrementAndGet();
    }
    return c;
  }

  private MuxConnection takeIdle() {
    int n = idle.length();
    // threads start at different slots so that they do not all race for the first one
    int start = (int) (Thread.currentThread().getId() % n);
    for (int k = 0; k < n; k++) {
      int i = start + k < n ? start + k : start + k - n;
      MuxConnection c = idle.get(i);
      if (c != null && idle.compareAndSet(i, c, null)) {
        idleCount.decrementAndGet();
        if (System.nanoTime() - c.idleSince < maxIdleNanos && !c.isBroken()) {
          return c;
        }
        dispose(c);
      }
    }
    return null;
  }

  /**
   * An idle connection, else a new one if fewer than {@code maxTotal} are open, else the next one
   * given back within {@code maxWait}. Opens connections on the calling thread.
   *
   * @throws NoSuchElementException if every connection stayed busy for {@code maxWait}
   * @throws Exception if opening a connection failed
   */
  MuxConnection borrow(Duration maxWait) throws Exception {
    long deadline = System.nanoTime() + maxWait.toNanos();
    while (true) {
      checkOpen();
      MuxConnection c = takeIdle();
      if (c == null && reserve()) {
        try {
          c = create();
        } catch (Exception | Error e) {
          // a call that queued meanwhile found no free slot: it gets an opening of its own
          openForWaiters();
          throw e;
        }
      }
      if (c != null) {
        lent.incrementAndGet();
        return c;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new NoSuchElementException(
            "Timeout waiting for idle object, borrowMaxWaitDuration=" + maxWait);
      }
      lock.lock();
      waiters.incrementAndGet();
      try {
        // checked under the lock after registering: a give-back in between signals us
        if (idleCount.get() == 0 && open.get() >= maxTotal && !closed) {
          changed.awaitNanos(left);
        }
      } finally {
        waiters.decrementAndGet();
        lock.unlock();
      }
    }
  }

  /**
   * Serves {@code waiter} with a connection: an idle one now, else the next one given back or
   * opened (an opening is started if fewer than {@code maxTotal} are open). Never blocks; the
   * waiter is served on whichever thread frees or opens the connection.
   */
  void await(Waiter waiter) {
    if (closed) {
      waiter.fail(new IllegalStateException("the connection pool is closed"));
      return;
    }
    if (waitingCount.incrementAndGet() > maxWaiting) {
      waitingCount.decrementAndGet();
      waiter.fail(
          new NoSuchElementException(
              "more than " + maxWaiting + " calls are waiting for a connection to this node"));
      return;
    }
    waiting.add(waiter);
    // After registering, look again: a connection given back meanwhile went idle unseen.
    MuxConnection c = takeIdle();
    if (c != null) {
      lent.incrementAndGet();
      handOut(c);
    } else {
      openForWaiters();
    }
  }

  /** Starts opening a connection for the waiting calls, if fewer than {@code maxTotal} are open. */
  private void openForWaiters() {
    if (closed || waitingCount.get() <= 0 || !reserve()) {
      return;
    }
    try {
      opener.execute(
          () -> {
            MuxConnection c;
            try {
              c = create();
            } catch (Exception | Error e) {
              failOneWaiter(e instanceof Exception ex ? ex : new IllegalStateException(e));
              return;
            }
            lent.incrementAndGet();
            handOut(c);
          });
    } catch (RejectedExecutionException e) {
      open.decrementAndGet(); // the node is closing
      signal();
    }
  }

  /** An opening failed: the first call still waiting fails with it (each call tries once). */
  private void failOneWaiter(Exception failure) {
    for (Waiter w; (w = waiting.poll()) != null; ) {
      waitingCount.decrementAndGet();
      if (w.fail(failure)) {
        return;
      }
    }
  }

  /**
   * Hands a lent connection to the first waiting call that still wants one; with none, it goes idle
   * (then a call queued meanwhile is served from the idle ones). A loop, not a recursion: while a
   * call is between counting itself and queueing, the connection would otherwise go back and forth
   * between the idle slots and this method until the stack ran out.
   */
  private void handOut(MuxConnection c) {
    while (c != null) {
      for (Waiter w; (w = waiting.poll()) != null; ) {
        waitingCount.decrementAndGet();
        if (w.serve(c)) {
          return;
        }
      }
      lent.decrementAndGet();
      keepIdle(c);
      c = idleForLateWaiter();
    }
  }

  /**
   * Opens one connection and keeps it idle, if fewer than {@code maxTotal} are open; a call that
   * began waiting while it was being opened gets it.
   *
   * <p>A call that queued meanwhile found no idle connection and no free slot (this opening held
   * it), so nothing else would serve it: the new connection must go to it, and if the opening fails
   * it must get an opening of its own.
   */
  void addIdle() throws Exception {
    if (reserve()) {
      MuxConnection c;
      try {
        c = create();
      } catch (Exception | Error e) {
        openForWaiters();
        throw e;
      }
      keepIdle(c);
      serveLateWaiter();
    }
  }

  /**
   * After a connection went idle: if a call is queued (it registered after this connection was put
   * in its slot, or looked for an idle one before), it takes an idle one.
   */
  private void serveLateWaiter() {
    MuxConnection c = idleForLateWaiter();
    if (c != null) {
      handOut(c);
    }
  }

  /**
   * An idle connection, lent, for a call already in the queue; null if none is queued (a call still
   * on its way into the queue looks for an idle connection itself once it is in) or none is idle.
   */
  private MuxConnection idleForLateWaiter() {
    if (waiting.peek() == null) {
      return null;
    }
    MuxConnection again = takeIdle();
    if (again != null) {
      lent.incrementAndGet();
    }
    return again;
  }

  /** Takes back a lent connection that is healthy: for the next waiting call, or idle. */
  void giveBack(MuxConnection c) {
    if (waitingCount.get() > 0 && !closed) {
      handOut(c);
      return;
    }
    lent.decrementAndGet();
    keepIdle(c);
    serveLateWaiter(); // a call began waiting meanwhile
  }

  private void keepIdle(MuxConnection c) {
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
        idleCount.incrementAndGet();
        if (closed && idle.compareAndSet(i, c, null)) {
          // raced with close(): close() may have emptied the slots before this one was filled
          idleCount.decrementAndGet();
          dispose(c);
          return;
        }
        signal();
        return;
      }
    }
    dispose(c); // cannot happen: there is a slot for every connection that may be open
  }

  /** Closes a lent connection whose state is unknown or broken, freeing its slot. */
  void discard(Connection c) {
    lent.decrementAndGet();
    dispose(c);
  }

  private void dispose(Connection c) {
    try {
      c.disconnect();
    } catch (RuntimeException ignored) {
      // the socket is gone either way
    }
    open.decrementAndGet();
    signal();
    openForWaiters(); // a slot is free: a waiting call gets a fresh connection
  }

  /** Closes every idle connection (after a failure they are likely stale too). */
  void clear() {
    for (int i = 0; i < idle.length(); i++) {
      MuxConnection c = idle.getAndSet(i, null);
      if (c != null) {
        idleCount.decrementAndGet();
        dispose(c);
      }
    }
  }

  int idle() {
    return idleCount.get();
  }

  /**
   * Connections lent out now. Counted after a connection is taken and before it is given back, so
   * for a moment while one is handed out it may read one low, never high.
   */
  int active() {
    return lent.get();
  }

  /**
   * Closes the idle connections now and lent ones when they are given back, and fails the waiting
   * calls. Idempotent.
   */
  void close() {
    closed = true;
    clear();
    signal();
    for (Waiter w; (w = waiting.poll()) != null; ) {
      waitingCount.decrementAndGet();
      w.fail(new IllegalStateException("the connection pool is closed"));
    }
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

  private MuxConnection create() throws Exception {
    try {
      return (MuxConnection) factory.makeObject().getObject();
    } catch (Exception | Error e) {
      open.decrementAndGet();
      signal();
      throw e;
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

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the connection pool is closed");
    }
  }
}
