package io.redlock.engine.internal;

import static io.redlock.engine.internal.ModelChecking.scenario;

import io.redlock.LeaseLostException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The {@code asLock} adapter's hold counts and hand-over between two threads of one JVM while the
 * holder's lease is lost (its key deleted on a majority, found by a keep-alive step) or runs out,
 * under every interleaving Lincheck's model checker picks (see {@link ModelChecking}).
 *
 * <p>Invariants: never two threads inside at once; a reentrant {@code tryLock} never answers true
 * once the held lease is lost or out (it throws {@link LeaseLostException}); an {@code unlock}
 * after a loss throws but still gives the lock up; at the end no thread owns it, the Redlock's
 * {@code lockHolders} map is empty, no node holds the key, and no renewal extends anything.
 */
@DisplayName("asLock under a model checker: two threads, hold counts, loss")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
public class RedlockLockModelCheckTest {
  private static final String R = "res";
  private static final Duration TTL = Duration.ofSeconds(3);

  private final Cluster cluster = new Cluster(3);
  private final QuorumRedlock redlock = cluster.redlock();
  private final ModelChecking.ManualTasks tasks = ModelChecking.manualTasks(redlock);

  /** Two adapters of one resource: they share the hold count, as documented. */
  private final Lock first = redlock.asLock(R, TTL);

  private final Lock second = redlock.asLock(R, TTL);
  private final AtomicInteger inside = new AtomicInteger();
  private final List<String> violations = ModelChecking.violations();

  /** The lease the holder thread holds now, or null. */
  private QuorumLease heldLease() {
    RedlockLock.Holder h = redlock.lockHolders.get(R);
    if (h == null) {
      return null;
    }
    h.guard.lock();
    try {
      return h.lease;
    } finally {
      h.guard.unlock();
    }
  }

  private void enter(String how) {
    if (inside.incrementAndGet() != 1) {
      violations.add("two threads inside at once (" + how + ")");
    }
    QuorumLease l = heldLease();
    // Reentry: a lease that is lost or out must not be reported held.
    boolean endedBefore = l == null || l.isDone() || !l.isValid();
    boolean reentered;
    try {
      reentered = second.tryLock();
    } catch (LeaseLostException e) {
      reentered = false;
    }
    if (reentered && endedBefore) {
      violations.add("a reentrant tryLock answered true on a lost lease (" + how + ")");
    }
    if (reentered) {
      unlockExpectingLossOnly(second);
    }
  }

  private void exit() {
    inside.decrementAndGet();
    unlockExpectingLossOnly(first);
    RedlockLock.Holder h = redlock.lockHolders.get(R);
    if (h != null) {
      h.guard.lock();
      try {
        if (h.owner == Thread.currentThread()) {
          violations.add("still the owner after the last unlock, holds " + h.holds);
        }
      } finally {
        h.guard.unlock();
      }
    }
  }

  private void unlockExpectingLossOnly(Lock lock) {
    try {
      lock.unlock();
    } catch (IllegalMonitorStateException e) {
      if (!(e.getCause() instanceof LeaseLostException)) {
        violations.add("unlock of a held lock failed: " + e);
      }
    }
  }

  @Operation
  public void tryLockCycle() {
    if (first.tryLock()) {
      enter("tryLock");
      exit();
    }
  }

  /** Threads that hold the lock between two operations ({@link #tryLockHold}). */
  private final java.util.Set<Thread> holding = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** Locks and keeps it held for this thread's next operation, {@link #reenterUnlock}. */
  @Operation
  public void tryLockHold() {
    if (first.tryLock()) {
      if (inside.incrementAndGet() != 1) {
        violations.add("two threads inside at once (tryLockHold)");
      }
      inside.decrementAndGet(); // enter() counts it again
      holding.add(Thread.currentThread());
    } else {
      holderDone = true;
    }
  }

  /** Reenters (which must fail once the lease is lost) and unlocks what tryLockHold took. */
  @Operation
  public void reenterUnlock() {
    if (holding.remove(Thread.currentThread())) {
      enter("held across operations");
      exit();
    }
    holderDone = true;
  }

  @Operation
  public void lockCycle() {
    first.lock();
    enter("lock");
    exit();
  }

  /** The holder's key is deleted on a majority, and a keep-alive step finds it: TOKEN_GONE. */
  @Operation
  public void loseLease() {
    QuorumLease l = heldLease();
    if (l != null) {
      for (int i = 0; i < 2; i++) {
        cluster.node(i).store.release(R, l.token()).await(Duration.ZERO);
      }
    }
    tasks.runDue();
  }

  /** Set when the thread of tryLockHold and reenterUnlock is through. */
  private volatile boolean holderDone;

  /**
   * Waits until the holder of tryLockHold holds a lease (or is through), then deletes its key and
   * finds the loss: the model checker then explores where the loss lands among the holder's calls.
   */
  @Operation
  public void loseHeldLease() {
    while (heldLease() == null && !holderDone) {
      Thread.onSpinWait();
    }
    loseLease();
  }

  /** The validity runs out: the ticker moves past it. */
  @Operation
  public void expire() {
    cluster.ticker.advance(TTL);
  }

  /** One keep-alive step: the renewal tasks the scheduler holds, run on this thread. */
  @Operation
  public void keepAlive() {
    tasks.runDue();
  }

  @Validate
  public void validate() {
    if (inside.get() != 0) {
      violations.add(inside.get() + " threads still inside");
    }
    if (!redlock.lockHolders.isEmpty()) {
      RedlockLock.Holder h = redlock.lockHolders.get(R);
      violations.add(
          "lockHolders not empty: users "
              + h.users
              + ", owner "
              + h.owner
              + ", holds "
              + h.holds
              + ", lease "
              + h.lease);
    }
    int before = extendCalls();
    tasks.runDue();
    if (extendCalls() != before) {
      violations.add("a renewal extended a lease after every unlock");
    }
    if (cluster.holding(R) != 0) {
      violations.add(cluster.holding(R) + " nodes still hold the key after every unlock");
    }
    if (!violations.isEmpty()) {
      throw new AssertionError(String.join("; ", violations));
    }
  }

  private int extendCalls() {
    int n = 0;
    for (FaultyNode node : cluster.nodes) {
      n += node.extendCalls.get();
    }
    return n;
  }

  /** Interleavings explored per tryLock scenario (cheap), and per scenario with lock() (costly). */
  private static final int TRY_LOCK_INVOCATIONS = Integer.getInteger("mc.n", 30);

  private static final int LOCK_INVOCATIONS = Integer.getInteger("mc.lockN", 4);

  @Test
  @DisplayName("tryLock: never two inside, never held after a loss, nothing left after unlock")
  void tryLockModelCheck() {
    Class<?> t = RedlockLockModelCheckTest.class;
    ModelChecking.check(
        t,
        TRY_LOCK_INVOCATIONS,
        List.of(
            scenario(
                t,
                List.of(),
                List.of(List.of("tryLockHold", "reenterUnlock"), List.of("loseHeldLease"))),
            scenario(
                t,
                List.of(),
                List.of(
                    List.of("tryLockCycle", "tryLockCycle"),
                    List.of("tryLockCycle"),
                    List.of("expire", "keepAlive")))));
  }

  @Test
  @DisplayName("lock() waits for the holder's last unlock, also when its lease was lost")
  void lockModelCheck() {
    Class<?> t = RedlockLockModelCheckTest.class;
    ModelChecking.check(
        t,
        LOCK_INVOCATIONS,
        List.of(
            scenario(
                t,
                List.of(),
                List.of(
                    List.of("lockCycle"),
                    List.of("tryLockHold", "reenterUnlock"),
                    List.of("loseHeldLease")))));
  }
}
