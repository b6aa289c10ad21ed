package io.redlock.engine.internal;

import static io.redlock.engine.internal.ModelChecking.scenario;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The wait queue's "no release is lost" rule under every interleaving Lincheck's model checker
 * picks (see {@link ModelChecking}): a release of this JVM racing the head's attempt, or the head
 * leaving without the lock, still wakes a waiter.
 *
 * <p>Two waiters, {@code a} (the head) and {@code b}, joined after a failed attempt; a local
 * release ({@link WaitQueue#LOCAL}, a lease of this Redlock released) comes while {@code a}
 * attempts and fails, or while {@code a} leaves without acquiring.
 */
@DisplayName("WaitQueue under a model checker: a release is never lost")
@Timeout(value = 2, unit = TimeUnit.MINUTES)
public class WaitQueueModelCheckTest {
  private static final int INVOCATIONS = Integer.getInteger("mc.queueN", 30);

  private final WaitQueue queue = new WaitQueue("res", new FakeTicker());
  private final WaitQueue.Waiter a = new WaitQueue.Waiter();
  private final WaitQueue.Waiter b = new WaitQueue.Waiter();

  private volatile boolean attemptBegun;
  private volatile boolean releasedAfterAttemptBegan;
  private volatile boolean releasedAfterHeadLeft;
  private volatile boolean aLeft;
  private volatile boolean localReleased;

  /** The head's last attempt found node 0 held elsewhere: node 0's release is the holder's. */
  public WaitQueueModelCheckTest() {
    Tally heldOnNode0 = new Tally();
    heldOnNode0.no = 1;
    heldOnNode0.noMask = 1;
    queue.join(a, heldOnNode0);
    queue.join(b, new Tally());
  }

  private volatile boolean nodeReleaseDone;
  private volatile boolean nodeReleasedBeforeHeadLeft;

  /** The head attempts (its wake is consumed) and fails. */
  @Operation
  public void headAttemptFails() {
    a.attempting();
    attemptBegun = true;
    Tally failed = new Tally();
    failed.no = 2;
    a.failed(failed, 2);
  }

  /** The head gives up (timeout, interrupt) without the lock. */
  @Operation
  public void headLeaves() {
    nodeReleasedBeforeHeadLeft = nodeReleaseDone;
    queue.leave(a, false, 0);
    aLeft = true;
  }

  /** A lease of this Redlock on the resource was released. */
  @Operation
  public void releaseLocally() {
    boolean begun = attemptBegun;
    boolean left = aLeft;
    queue.released(WaitQueue.LOCAL);
    releasedAfterAttemptBegan = begun && !left;
    releasedAfterHeadLeft = left;
    localReleased = true;
  }

  /**
   * Node 0 reports a release: the holder's for the head (it saw node 0 held elsewhere), an echo for
   * {@code b}.
   */
  @Operation
  public void releaseOnNode0() {
    queue.released(0);
    nodeReleaseDone = true;
  }

  @Validate
  public void validate() {
    // After the head's attempt began, a release must wake a waiter: the head at once, or when its
    // attempt fails (a release during an attempt is only noted until then), or the next waiter if
    // the head left meanwhile.
    if (releasedAfterAttemptBegan && !a.wakeup.isRaised() && !b.wakeup.isRaised()) {
      throw new AssertionError("a release after the head's attempt began woke nobody");
    }
    if (releasedAfterHeadLeft && !b.wakeup.isRaised()) {
      throw new AssertionError("a release after the head left did not wake the next waiter");
    }
    // The head woken by node 0 and leaving without the lock passes the wake on to b.
    if (nodeReleasedBeforeHeadLeft && !b.wakeup.isRaised()) {
      throw new AssertionError("the head left with node 0's wake unused: the next waiter sleeps");
    }
    // A head that leaves without attempting passes a local release's wake on, whenever it came.
    if (localReleased && aLeft && !attemptBegun && !b.wakeup.isRaised()) {
      throw new AssertionError("the head left with the release's wake: the next waiter sleeps");
    }
  }

  @Test
  @DisplayName("a release racing the head's attempt or departure wakes a waiter")
  void modelCheck() {
    Class<?> t = WaitQueueModelCheckTest.class;
    ModelChecking.check(
        t,
        INVOCATIONS,
        List.of(
            scenario(t, List.of(), List.of(List.of("headAttemptFails"), List.of("releaseLocally"))),
            scenario(t, List.of(), List.of(List.of("headLeaves"), List.of("releaseLocally"))),
            scenario(t, List.of(), List.of(List.of("headLeaves"), List.of("releaseOnNode0"))),
            scenario(
                t,
                List.of(),
                List.of(List.of("headAttemptFails", "headLeaves"), List.of("releaseLocally")))));
  }
}
