package io.redlock.chaos;

import io.redlock.chaos.History.Grant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * C3: fencing tokens strictly increase in grant order. For each resource, the grants of all clients
 * sorted by grant time must carry strictly increasing, positive fencing tokens. (If a lease X was
 * granted before a lease Y, Y's acquisition began after X's write-back, which the library promises
 * makes {@code token(Y) > token(X)}; an overlap of X and Y is C1's business.)
 */
public final class FencingOrderCheck {
  private FencingOrderCheck() {}

  /** Checks every resource; not applicable when no grant carries a fencing token. */
  public static CheckResult check(History history) {
    if (history.grants().stream().allMatch(g -> g.fence() == 0)) {
      return CheckResult.na("C3", "fencing off");
    }
    Map<String, List<Grant>> byResource = new TreeMap<>();
    for (Grant g : history.grants()) {
      byResource.computeIfAbsent(g.resource(), r -> new ArrayList<>()).add(g);
    }
    int checked = 0;
    int violations = 0;
    String first = null;
    for (Map.Entry<String, List<Grant>> e : byResource.entrySet()) {
      List<Grant> list = e.getValue();
      list.sort(Comparator.comparingLong(Grant::grantNanos));
      Grant previous = null;
      for (Grant g : list) {
        checked++;
        boolean bad = g.fence() <= 0 || (previous != null && g.fence() <= previous.fence());
        if (bad) {
          violations++;
          if (first == null) {
            first =
                e.getKey()
                    + ": "
                    + g.jvm()
                    + "/"
                    + g.thread()
                    + " got token "
                    + g.fence()
                    + (previous == null
                        ? ""
                        : " after "
                            + previous.jvm()
                            + "/"
                            + previous.thread()
                            + " got "
                            + previous.fence()
                            + " "
                            + String.format("%.3f", (g.grantNanos() - previous.grantNanos()) / 1e6)
                            + " ms earlier");
          }
        }
        if (previous == null || g.fence() > previous.fence()) {
          previous = g;
        }
      }
    }
    if (violations > 0) {
      return CheckResult.fail(
          "C3",
          violations + " of " + checked + " tokens not above every earlier one; first: " + first);
    }
    return CheckResult.pass("C3", checked + " tokens strictly increasing in grant order");
  }
}
