package io.redlock.chaos;

import io.redlock.chaos.History.Grant;
import io.redlock.chaos.History.Work;
import java.util.Map;
import java.util.TreeMap;

/**
 * C2: no lost updates. Under each lease the holder increments a counter in a separate store with a
 * deliberately non-atomic read-modify-write (read, short pause, write value + 1); if two holders
 * overlap, one increment overwrites the other and the final count falls short.
 *
 * <p>Per resource: {@code completed} = increments logged as done ({@code W ... ok}). Some
 * increments have an unknown outcome: a lease granted to a JVM that was killed before it logged its
 * increment ({@code G} without {@code W} and without {@code R}), or an increment whose write failed
 * ({@code W ... error}). The check passes if {@code completed <= final <= completed + unknown};
 * without unknown outcomes that is {@code final == completed}. A lost update makes {@code final <
 * completed}. Writes refused by fencing ({@code W ... stale}) count as not done.
 */
public final class LostUpdateCheck {
  private LostUpdateCheck() {}

  /**
   * Checks the resources whose final counter values are given.
   *
   * @param finalValues resource -&gt; the counter's value read from the store after the run
   */
  public static CheckResult check(History history, Map<String, Long> finalValues) {
    if (finalValues.isEmpty()) {
      return CheckResult.na("C2", "no counter in this scenario");
    }
    Map<String, long[]> tally = new TreeMap<>(); // resource -> {completed, unknown}
    for (String resource : finalValues.keySet()) {
      tally.put(resource, new long[2]);
    }
    for (Grant g : history.grants()) {
      long[] t = tally.get(g.resource());
      if (t == null) {
        continue;
      }
      Work w = history.workOf(g.token()).orElse(null);
      if (w == null) {
        if (history.releaseOf(g.token()).isEmpty()) {
          t[1]++; // killed while holding, before its increment was logged
        }
      } else if (w.ok()) {
        t[0]++;
      } else if (w.outcome().equals("error")) {
        t[1]++;
      }
    }
    long completed = 0;
    long unknown = 0;
    StringBuilder bad = new StringBuilder();
    for (Map.Entry<String, long[]> e : tally.entrySet()) {
      long c = e.getValue()[0];
      long u = e.getValue()[1];
      long fin = finalValues.get(e.getKey());
      completed += c;
      unknown += u;
      if (fin < c || fin > c + u) {
        if (bad.length() > 0) {
          bad.append("; ");
        }
        bad.append(e.getKey())
            .append(": counter ")
            .append(fin)
            .append(" but ")
            .append(c)
            .append(" increments completed")
            .append(u > 0 ? " (+" + u + " unknown)" : "")
            .append(fin < c ? ", " + (c - fin) + " lost" : "");
      }
    }
    if (bad.length() > 0) {
      return CheckResult.fail("C2", bad.toString());
    }
    return CheckResult.pass(
        "C2",
        completed
            + " increments on "
            + tally.size()
            + " counter(s), none lost"
            + (unknown > 0 ? " (" + unknown + " of unknown outcome, killed mid-hold)" : ""));
  }
}
