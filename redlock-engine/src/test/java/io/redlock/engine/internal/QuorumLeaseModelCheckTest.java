package io.redlock.engine.internal;

import static io.redlock.engine.internal.ModelChecking.scenario;

import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A kept-alive lease's end races its owner's calls: release, a keep-alive renewal step, {@code
 * extend}, the key deleted elsewhere (found by the next renewal: {@code TOKEN_GONE}) and the
 * validity running out (a fake ticker moved past it: {@code UNREACHABLE} at the next renewal), all
 * at once, under every interleaving Lincheck's model checker picks (see {@link ModelChecking}).
 *
 * <p>Invariants (the loss matrix of docs/safety.md): once the loss was reported or {@code release}
 * returned, {@code isValid} and {@code checkValid} never say "held" again, nor does any {@code
 * extend} answer true; a lease seen not held is never seen held again; after {@code release}
 * returns no extension is sent (whatever renewal task is left), and no node holds the key.
 */
@DisplayName("QuorumLease under a model checker: release, renewal, extend, loss, expiry")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
public class QuorumLeaseModelCheckTest {
  private static final String R = "res";
  private static final Duration TTL = Duration.ofSeconds(3);

  /** Interleavings explored per scenario; 5 scenarios. */
  private static final int INVOCATIONS = Integer.getInteger("mc.leaseN", 15);

  private final Cluster cluster = new Cluster(3);
  private final QuorumRedlock redlock = cluster.redlock();
  private final ModelChecking.ManualTasks tasks = ModelChecking.manualTasks(redlock);
  private final QuorumLease lease;
  private final CompletableFuture<LeaseLost> lost;
  private final List<String> violations = ModelChecking.violations();

  private volatile boolean released;
  private volatile int extendsAtRelease = -1;
  private volatile boolean seenNotHeld;

  public QuorumLeaseModelCheckTest() {
    lease = (QuorumLease) redlock.tryAcquire(R, TTL).orElseThrow();
    lease.keepAlive(); // its renewal waits in tasks, for keepAlive() below
    lost = lease.whenLost().toCompletableFuture();
  }

  private int extendCalls() {
    int n = 0;
    for (FaultyNode node : cluster.nodes) {
      n += node.extendCalls.get();
    }
    return n;
  }

  private boolean ended() {
    return released || lost.isDone();
  }

  @Operation
  public void release() {
    lease.release();
    extendsAtRelease = extendCalls();
    released = true;
    observe();
  }

  /** One keep-alive step: the renewal task the scheduler holds, run on this thread. */
  @Operation
  public void keepAlive() {
    tasks.runDue();
  }

  @Operation
  public void extend() {
    boolean endedBefore = ended();
    boolean extended;
    try {
      extended = lease.extend(TTL);
    } catch (IllegalStateException refused) {
      return; // released or lost: refused, as it should be
    }
    if (extended && endedBefore) {
      violations.add("extend answered true after the lease had ended");
    }
  }

  /** The validity runs out: the ticker moves past it. */
  @Operation
  public void expire() {
    cluster.ticker.advance(TTL);
  }

  /** Another handle releases the key on a majority (as resume() then release() would). */
  @Operation
  public void deleteElsewhere() {
    for (int i = 0; i < 2; i++) {
      cluster.node(i).store.release(R, lease.token()).await(Duration.ZERO);
    }
  }

  @Operation
  public void observe() {
    boolean endedBefore = ended();
    boolean notHeldBefore = seenNotHeld;
    boolean valid = lease.isValid();
    boolean checked;
    try {
      lease.checkValid();
      checked = true;
    } catch (LeaseLostException e) {
      checked = false;
    }
    boolean remaining = !lease.remainingValidity().isZero();
    if (endedBefore && (valid || checked || remaining)) {
      violations.add(
          "held after its end: isValid " + valid + ", checkValid " + checked + ", " + remaining);
    }
    if (notHeldBefore && (valid || checked)) {
      violations.add("held again after it was seen not held: " + valid + ", " + checked);
    }
    if (!valid) {
      seenNotHeld = true;
    }
  }

  @Validate
  public void validate() {
    // Whatever renewal task is left runs now: it must send nothing once released or lost.
    int before = extendCalls();
    tasks.runDue();
    tasks.runDue();
    if (ended() && extendCalls() != before) {
      violations.add("a renewal extended the lease after its end");
    }
    if (released && extendCalls() != extendsAtRelease) {
      violations.add(
          "extensions sent after release() returned: "
              + (extendCalls() - extendsAtRelease)
              + " node calls");
    }
    if (released && cluster.holding(R) != 0) {
      violations.add("released, but " + cluster.holding(R) + " nodes still hold the key");
    }
    if (lost.isDone() && lease.isValid()) {
      violations.add("valid after its loss was reported: " + lost.join());
    }
    if (!violations.isEmpty()) {
      throw new AssertionError(String.join("; ", violations));
    }
  }

  @Test
  @DisplayName("no interleaving says held after the end, or extends after release")
  void modelCheck() {
    Class<?> t = QuorumLeaseModelCheckTest.class;
    ModelChecking.check(
        t,
        INVOCATIONS,
        List.of(
            scenario(
                t,
                List.of(),
                List.of(
                    List.of("release"),
                    List.of("keepAlive", "keepAlive"),
                    List.of("deleteElsewhere", "observe"))),
            scenario(
                t,
                List.of(),
                List.of(
                    List.of("extend", "observe"),
                    List.of("keepAlive", "observe"),
                    List.of("expire", "observe"))),
            scenario(
                t,
                List.of(),
                List.of(
                    List.of("release", "observe"),
                    List.of("extend", "observe"),
                    List.of("keepAlive"))),
            scenario(
                t,
                List.of("deleteElsewhere"),
                List.of(
                    List.of("keepAlive", "observe"),
                    List.of("extend", "observe"),
                    List.of("observe", "release"))),
            scenario(
                t,
                List.of("expire"),
                List.of(
                    List.of("keepAlive", "release"), List.of("observe", "extend", "observe")))));
  }
}
