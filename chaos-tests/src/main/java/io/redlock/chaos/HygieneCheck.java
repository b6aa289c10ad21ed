package io.redlock.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * C5: no lock keys or rows are left once every lease is released and the TTLs have passed. The
 * input is what each store holds, read directly from it: Redis keys ({@code SCAN}), the live rows
 * of a SQL lock table. Fencing counters stay by design: Redis keys starting with {@value
 * #FENCE_PREFIX} are not lock keys (SQL rows that only keep a counter are expired, hence not live,
 * and are not listed).
 */
public final class HygieneCheck {
  /** The prefix of the Redis backend's fencing counters. */
  public static final String FENCE_PREFIX = "{fence}:";

  private HygieneCheck() {}

  /**
   * Checks one snapshot of the stores.
   *
   * @param liveKeys node name -&gt; the lock keys (Redis) or live rows' keys (SQL) it holds
   */
  public static CheckResult check(Map<String, List<String>> liveKeys) {
    List<String> left = new ArrayList<>();
    int fenceCounters = 0;
    for (Map.Entry<String, List<String>> e : liveKeys.entrySet()) {
      for (String key : e.getValue()) {
        if (key.startsWith(FENCE_PREFIX)) {
          fenceCounters++;
        } else {
          left.add(e.getKey() + ":" + key);
        }
      }
    }
    if (!left.isEmpty()) {
      return CheckResult.fail(
          "C5",
          left.size()
              + " lock key(s) left: "
              + String.join(", ", left.subList(0, Math.min(5, left.size())))
              + (left.size() > 5 ? ", ..." : ""));
    }
    return CheckResult.pass(
        "C5",
        "no lock key or live row on "
            + liveKeys.size()
            + " node(s)"
            + (fenceCounters > 0 ? " (" + fenceCounters + " fencing counters kept)" : ""));
  }
}
