package io.redlock.engine.internal;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The order in which a fan-out starts its calls and awaits their replies: the slowest node first,
 * as measured. A fan-out's replies come back no sooner than its slowest node's; every call started
 * before that node's delays it by the time the start takes (a write to a socket, a task queued),
 * and that delay is paid twice per lock (acquire and release). Started first, the slowest node's
 * round trip covers the starts of all the others. Measured on 3 Redis and 2 PostgreSQL nodes, the
 * PostgreSQL nodes listed first made a cycle about a tenth faster than listed last.
 *
 * <p>What is measured is how long each await blocked. Awaited in this order, the first node's wait
 * is its round trip less the other starts; a node that answered meanwhile costs only the taking of
 * its answer; a node that answers after all those awaited before it shows by how much. So a node
 * slower than the one awaited first gains on it until it is started first, and a node that became
 * faster falls behind the ones that now wait longer. Each node's wait is a moving average (a weight
 * of 1/{@value #WEIGHT} for the newest sample) over one fan-out in {@value #SAMPLE_EVERY}, and the
 * order is worked out again every {@value #REORDER_EVERY} samples. A node moves ahead of another
 * only when its wait is clearly longer (by an eighth, and by at least {@value #MARGIN_NANOS} ns),
 * so that nodes of equal speed keep their order.
 *
 * <p>A node whose reply timed out goes last, at once, and stays last until it answers in a measured
 * fan-out: its calls are not worth starting early, and awaited first it would hold back the reading
 * of the answers that do come (an extension counts its quorum from when they are read, and a
 * restart quarantine asks a granting node's status after reading its vote). A failure that comes
 * back at once (a refused connection) is measured as a short wait, so such a node drifts back too.
 *
 * <p>Thread-safe without locks: samples and counts are racy on purpose (a lost sample only slows
 * the estimate), and an order, once published, is never changed. Allocates only when the order
 * changes.
 */
final class FanOutOrder {
  private static final Logger LOG = LoggerFactory.getLogger(FanOutOrder.class);

  /**
   * One fan-out in this many is measured. Odd, so that one thread's acquire and release alternate
   * in being measured; with several threads the measured fan-outs are of all kinds anyway.
   */
  static final int SAMPLE_EVERY = 3;

  /** Measured fan-outs between two workings-out of the order. */
  static final int REORDER_EVERY = 16;

  /** The newest sample's weight in the moving average is 1/WEIGHT. A power of two. */
  static final int WEIGHT = 8;

  private static final int WEIGHT_SHIFT = Integer.numberOfTrailingZeros(WEIGHT);

  /** A node moves ahead of another only if its wait is longer by at least this much. */
  static final long MARGIN_NANOS = 1_000;

  private final String[] names;

  /** Each node's moving-average wait, in nanoseconds. */
  private final AtomicLongArray waits;

  /** 1 for a node whose last reply timed out and that has not answered a measured fan-out since. */
  private final AtomicIntegerArray timedOut;

  /** Node indexes, slowest first; replaced, never changed. */
  private volatile int[] order;

  /** Fan-outs started, and fan-outs measured (racy counts; losing some does no harm). */
  private int fanOuts;

  private int samples;

  FanOutOrder(String[] names) {
    this.names = names;
    int n = names.length;
    this.waits = new AtomicLongArray(n);
    this.timedOut = new AtomicIntegerArray(n);
    int[] start = new int[n];
    for (int i = 0; i < n; i++) {
      start[i] = i;
    }
    this.order = start;
  }

  /** The current order: node indexes, slowest first. Must not be modified. */
  int[] current() {
    return order;
  }

  /**
   * Whether the fan-out starting now is measured: {@link #waited} for each of its awaits, then
   * {@link #measured}. Never for a single node, which has no order to find.
   */
  boolean sampleNext() {
    if (names.length < 2) {
      return false;
    }
    int count = ++fanOuts;
    return count % SAMPLE_EVERY == 0;
  }

  /**
   * An await of a measured fan-out on {@code node} blocked for {@code nanos} and ended with an
   * answer or a failure that was not a timeout.
   */
  void waited(int node, long nanos) {
    long sample = Math.max(0, nanos);
    long average = waits.getOpaque(node);
    waits.setOpaque(node, average + ((sample - average) >> WEIGHT_SHIFT));
    if (timedOut.getOpaque(node) != 0) {
      timedOut.setOpaque(node, 0); // back in the order at the next working-out
    }
  }

  /**
   * The reply of {@code node} timed out, in any fan-out (measured or not): the node goes last at
   * once. A timeout's wait is not a sample.
   */
  void timedOut(int node) {
    if (names.length < 2 || timedOut.getOpaque(node) != 0) {
      return;
    }
    timedOut.setOpaque(node, 1);
    reorder();
  }

  /** A measured fan-out is done; every {@value #REORDER_EVERY}th works the order out again. */
  void measured() {
    int count = ++samples;
    if (count % REORDER_EVERY == 0) {
      reorder();
    }
  }

  /** Each node's moving-average wait in nanoseconds, by node index (for tests and logs). */
  long[] waits() {
    long[] out = new long[waits.length()];
    for (int i = 0; i < out.length; i++) {
      out[i] = waits.getOpaque(i);
    }
    return out;
  }

  /**
   * Sorts the current order: nodes that timed out last, the others by wait, longest first, a node
   * moving ahead of another only if its wait is clearly longer (insertion sort: stable, and n is
   * small). Allocates and publishes a new array only if the order changes.
   */
  void reorder() {
    int[] was = order;
    boolean changes = false;
    for (int k = 1; k < was.length && !changes; k++) {
      changes = goesBefore(was[k], was[k - 1]);
    }
    if (!changes) {
      return;
    }
    int[] next = was.clone();
    for (int k = 1; k < next.length; k++) {
      int node = next[k];
      int j = k - 1;
      while (j >= 0 && goesBefore(node, next[j])) {
        next[j + 1] = next[j];
        j--;
      }
      next[j + 1] = node;
    }
    order = next;
    if (LOG.isDebugEnabled()) {
      LOG.debug("fan-out order now {}, was {}", describe(next), describe(was));
    }
  }

  /** Whether node {@code a} belongs before node {@code b}, now just before it. */
  private boolean goesBefore(int a, int b) {
    boolean aOut = timedOut.getOpaque(a) != 0;
    boolean bOut = timedOut.getOpaque(b) != 0;
    if (aOut != bOut) {
      return bOut;
    }
    return clearlyLonger(waits.getOpaque(a), waits.getOpaque(b));
  }

  private static boolean clearlyLonger(long a, long b) {
    return a > b + Math.max(MARGIN_NANOS, b >> 3);
  }

  private String describe(int[] nodes) {
    StringBuilder sb = new StringBuilder("[");
    for (int k = 0; k < nodes.length; k++) {
      int node = nodes[k];
      if (k > 0) {
        sb.append(", ");
      }
      sb.append(names[node]);
      if (timedOut.getOpaque(node) != 0) {
        sb.append(" timed out");
      } else {
        sb.append(' ').append(waits.getOpaque(node) / 1_000).append(" µs");
      }
    }
    return sb.append(']').toString();
  }
}
