package io.redlock.chaos;

import java.util.Collection;
import java.util.Optional;

/**
 * C4: liveness after the faults end. Two parts, both required:
 *
 * <ol>
 *   <li>a fresh client (a new {@code Redlock}, started when the faults ended) acquires within its
 *       budget, the TTL plus the retry time;
 *   <li>the clients' throughput comes back: counting grants in {@value #BUCKET_MILLIS} ms buckets,
 *       some window of {@value #WINDOW_BUCKETS} consecutive buckets that lies entirely within
 *       {@value #RECOVERY_MILLIS} ms after the faults ended averages at least {@value #RATIO} of
 *       the mean rate before the faults. (Two buckets, not one, so that one descheduled moment on a
 *       shared 2-core machine neither fails nor passes the check alone.)
 * </ol>
 *
 * Scenarios without a fault that could slow the clients check the first part only.
 */
public final class LivenessCheck {
  /** Width of a throughput bucket. */
  public static final long BUCKET_MILLIS = 250;

  /** Buckets averaged to judge recovery. */
  public static final int WINDOW_BUCKETS = 2;

  /** Time after the faults end within which throughput must be back. */
  public static final long RECOVERY_MILLIS = 2_000;

  /** The fraction of the pre-fault rate that counts as back ("within 20%"). */
  public static final double RATIO = 0.8;

  private static final long BUCKET = BUCKET_MILLIS * 1_000_000L;

  private LivenessCheck() {}

  /**
   * What the fresh client achieved.
   *
   * @param acquired whether it got the lease within its budget
   * @param waitedNanos how long it waited
   * @param budgetNanos the budget: TTL plus retry time
   */
  public record Fresh(boolean acquired, long waitedNanos, long budgetNanos) {}

  /**
   * The throughput part's input.
   *
   * @param grantNanos the grant times of the clients under load
   * @param preFrom start of the pre-fault window (after warm-up)
   * @param preTo end of the pre-fault window (the first fault)
   * @param faultEnd when the last fault ended
   * @param dataEnd when the clients stopped (must be at least {@code faultEnd} + the recovery time)
   */
  public record Throughput(
      Collection<Long> grantNanos, long preFrom, long preTo, long faultEnd, long dataEnd) {}

  /** Checks the fresh client and, if given, the throughput's recovery. */
  public static CheckResult check(Fresh fresh, Optional<Throughput> throughput) {
    StringBuilder detail = new StringBuilder();
    boolean ok = true;
    detail.append(
        String.format(
            "fresh client %s after %d ms (budget %d ms)",
            fresh.acquired() ? "acquired" : "did NOT acquire",
            fresh.waitedNanos() / 1_000_000,
            fresh.budgetNanos() / 1_000_000));
    if (!fresh.acquired() || fresh.waitedNanos() > fresh.budgetNanos()) {
      ok = false;
    }
    if (throughput.isPresent()) {
      Throughput t = throughput.get();
      String recovery = recovery(t);
      ok &= recovery.startsWith("back");
      detail.append("; ").append(recovery);
    }
    return ok
        ? CheckResult.pass("C4", detail.toString())
        : CheckResult.fail("C4", detail.toString());
  }

  /** Describes the throughput's recovery: starts with "back" if it came back in time. */
  static String recovery(Throughput t) {
    long preBuckets = (t.preTo() - t.preFrom()) / BUCKET;
    if (preBuckets < WINDOW_BUCKETS) {
      return "pre-fault window too short (" + (t.preTo() - t.preFrom()) / 1_000_000 + " ms)";
    }
    long preEnd = t.preFrom() + preBuckets * BUCKET;
    double preRate = (double) count(t.grantNanos(), t.preFrom(), preEnd) / preBuckets;
    if (preRate <= 0) {
      return "no grants before the faults";
    }
    long recoveryEnd = t.faultEnd() + RECOVERY_MILLIS * 1_000_000L;
    if (t.dataEnd() < recoveryEnd) {
      return "clients stopped "
          + (recoveryEnd - t.dataEnd()) / 1_000_000
          + " ms too early to judge recovery";
    }
    int slots = (int) (RECOVERY_MILLIS / BUCKET_MILLIS);
    double best = 0;
    for (int k = 0; k + WINDOW_BUCKETS <= slots; k++) {
      long from = t.faultEnd() + k * BUCKET;
      double rate =
          (double) count(t.grantNanos(), from, from + WINDOW_BUCKETS * BUCKET) / WINDOW_BUCKETS;
      best = Math.max(best, rate);
      if (rate >= RATIO * preRate) {
        return String.format(
            "back to %.0f%% of the pre-fault %.1f grants/%d ms within %d ms",
            100 * rate / preRate, preRate, BUCKET_MILLIS, (k + WINDOW_BUCKETS) * BUCKET_MILLIS);
      }
    }
    return String.format(
        "NOT back within %d ms: best %.0f%% of the pre-fault %.1f grants/%d ms",
        RECOVERY_MILLIS, 100 * best / preRate, preRate, BUCKET_MILLIS);
  }

  private static long count(Collection<Long> times, long from, long to) {
    return times.stream().filter(x -> x >= from && x < to).count();
  }
}
