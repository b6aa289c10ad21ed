package io.redlock.jdbc.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Cancels lock statements that run past their query timeout, with one thread for all of them: the
 * job {@link Statement#setQueryTimeout} does, for drivers that do it with a timer task per
 * statement (pgjdbc: a task on a {@code java.util.Timer} whose thread wakes once per statement even
 * after the task is cancelled). Here a statement costs two volatile writes to its thread's slot,
 * and the watchdog looks at the slots every {@link #period} while statements run, and stops after a
 * while without any.
 *
 * <p>Only for drivers whose {@link Statement#cancel} cancels that statement or nothing: pgjdbc
 * sends a cancel request only while the statement it is called on is executing, so a watchdog that
 * reads a slot just as its statement ends cancels nothing. (MariaDB's cancel kills whatever the
 * connection runs at that moment: not for it.)
 */
final class StatementWatchdog {
  /** The one the lock tables share. */
  static final StatementWatchdog SHARED =
      new StatementWatchdog(TimeUnit.MILLISECONDS.toNanos(100), TimeUnit.SECONDS.toNanos(30));

  private static final VarHandle STATEMENT;

  static {
    try {
      STATEMENT = MethodHandles.lookup().findVarHandle(Slot.class, "statement", Statement.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** One thread's statement under watch, if any. */
  static final class Slot {
    private final WeakReference<Thread> owner;
    private volatile Statement statement;
    private volatile long deadline;

    Slot(Thread owner) {
      this.owner = new WeakReference<>(owner);
    }

    boolean dead() {
      Thread t = owner.get();
      return t == null || !t.isAlive();
    }
  }

  private final long period;
  private final long idleExit;
  private final CopyOnWriteArrayList<Slot> slots = new CopyOnWriteArrayList<>();
  private final ThreadLocal<Slot> mine;
  private final AtomicBoolean running = new AtomicBoolean();

  /**
   * Cancel requests made so far, for tests and diagnostics (one may have come as its statement
   * ended, and cancelled nothing).
   */
  private final AtomicLong cancelled = new AtomicLong();

  /**
   * @param period how often it looks at the slots while it runs, in nanoseconds (the timeout's
   *     precision)
   * @param idleExit how long it runs on without any statement under watch, in nanoseconds
   */
  StatementWatchdog(long period, long idleExit) {
    this.period = period;
    this.idleExit = idleExit;
    this.mine = new ThreadLocal<>();
  }

  /**
   * Watches {@code statement}, about to run on this thread, until {@link #done}: it is cancelled if
   * it still runs {@code timeoutNanos} from now. A statement watched before on this thread, if not
   * done yet, is replaced.
   */
  void watch(Statement statement, long timeoutNanos) {
    Slot s = mine.get();
    if (s == null) {
      s = new Slot(Thread.currentThread());
      slots.add(s);
      mine.set(s);
    }
    s.deadline = System.nanoTime() + timeoutNanos;
    s.statement = statement;
    if (!running.get()) {
      start(); // after the slot is set: a watchdog ending now sees it, or this sees it ended
    }
  }

  /** Ends the watch of this thread's statement; call only after {@link #watch} on this thread. */
  void done() {
    Slot s = mine.get();
    if (s != null && s.statement != null) {
      s.statement = null;
    }
  }

  long cancelled() {
    return cancelled.get();
  }

  /** Threads with a slot (for tests). */
  int slots() {
    return slots.size();
  }

  boolean running() {
    return running.get();
  }

  private void start() {
    if (running.compareAndSet(false, true)) {
      try {
        // no inherited thread locals, and not the caller's class loader: the thread may outlive
        // the application thread that happens to start it
        Thread t = new Thread(null, this::loop, "redlock-jdbc-statement-watchdog", 0, false);
        t.setDaemon(true);
        t.setPriority(Thread.NORM_PRIORITY);
        t.setContextClassLoader(null);
        t.start();
      } catch (Throwable e) {
        running.set(false); // the next statement tries again
        throw e;
      }
    }
  }

  private void loop() {
    boolean ended = false;
    try {
      ended = watchUntilIdle();
    } finally {
      if (!ended) {
        running.set(false); // died of an Error: the next statement starts another
      }
    }
  }

  /** The watchdog's loop; true when it ended for being idle (having handed over if needed). */
  private boolean watchUntilIdle() {
    long lastBusy = System.nanoTime();
    while (true) {
      LockSupport.parkNanos(this, period);
      long now = System.nanoTime();
      if (sweep(now)) {
        lastBusy = now;
      } else if (now - lastBusy >= idleExit) {
        running.set(false);
        // a statement watched just now saw "running" still true: look once more, and go on if
        // there is one, unless its thread started another watchdog already
        if (!sweep(System.nanoTime()) || !running.compareAndSet(false, true)) {
          return true;
        }
        lastBusy = System.nanoTime();
      }
    }
  }

  /** Cancels overdue statements; forgets slots of threads that ended. True if any is watched. */
  private boolean sweep(long now) {
    boolean busy = false;
    for (Slot s : slots) {
      Statement st = s.statement;
      if (st == null) {
        if (s.dead()) {
          slots.remove(s);
        }
        continue;
      }
      busy = true;
      // watch() sets the deadline before the statement, so the deadline read here is that of st
      // or of a newer statement (later: st is then left for the next sweep). Cancelling st after
      // it ended does nothing (see the class comment); the compare-and-set only keeps a newer
      // statement's watch from being dropped.
      if (now - s.deadline >= 0 && STATEMENT.compareAndSet(s, st, null)) {
        cancel(st);
      }
    }
    return busy;
  }

  private void cancel(Statement st) {
    cancelled.incrementAndGet();
    try {
      st.cancel();
    } catch (SQLException | RuntimeException e) {
      // closed meanwhile, or the cancel request could not be sent: the socket timeout remains
    }
  }
}
