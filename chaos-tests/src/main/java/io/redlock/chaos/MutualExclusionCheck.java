package io.redlock.chaos;

import io.redlock.chaos.History.Grant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * C1: no two holders of a resource overlap while both believe they hold it.
 *
 * <p>A holder believes it holds from its grant (read right after {@code acquire} returned) until
 * the earlier of its release call (read just before {@code release()}) and its validity end (grant
 * + {@code remainingValidity()} read at grant): past its validity a correct client no longer
 * assumes it holds the lock, and a killed client never releases. For each resource, the holds of
 * all clients sorted by grant must not overlap: a hold may start only once every earlier hold
 * ended.
 *
 * <p>No slack: {@link #EPSILON_NANOS} is 0. None is needed, because every recorded time errs on the
 * strict side: a grant is read after {@code acquire} returned (later than the real grant), a
 * release call before {@code release()} (earlier than the keys' deletion), and the validity end
 * after reading the remaining validity (later than the end the engine computed, by microseconds).
 * All are {@code System.nanoTime()} values, one monotonic clock for every JVM of the machine.
 */
public final class MutualExclusionCheck {
  /** The measurement allowance between one hold's end and the next hold's start: none. */
  public static final long EPSILON_NANOS = 0;

  private MutualExclusionCheck() {}

  /** A hold: when a holder believed it held the lock. */
  public record Hold(Grant grant, long start, long end) {}

  /** Checks every resource of {@code history}. */
  public static CheckResult check(History history) {
    Map<String, List<Hold>> byResource = new TreeMap<>();
    for (Grant g : history.grants()) {
      long end =
          history
              .releaseOf(g.token())
              .map(r -> Math.min(r.callNanos(), g.validEndNanos()))
              .orElse(g.validEndNanos());
      byResource
          .computeIfAbsent(g.resource(), r -> new ArrayList<>())
          .add(new Hold(g, g.grantNanos(), end));
    }
    int holds = 0;
    List<String> overlaps = new ArrayList<>();
    int overlapCount = 0;
    for (Map.Entry<String, List<Hold>> e : byResource.entrySet()) {
      List<Hold> list = e.getValue();
      list.sort(Comparator.comparingLong(Hold::start));
      holds += list.size();
      Hold longest = null; // the earlier hold that ends last
      for (Hold h : list) {
        if (longest != null && h.start() < longest.end() - EPSILON_NANOS) {
          overlapCount++;
          if (overlaps.size() < 3) {
            overlaps.add(describe(e.getKey(), longest, h));
          }
        }
        if (longest == null || h.end() > longest.end()) {
          longest = h;
        }
      }
    }
    if (overlapCount > 0) {
      return CheckResult.fail(
          "C1",
          overlapCount
              + " of "
              + holds
              + " holds began before an earlier holder's hold ended; first: "
              + overlaps.stream().collect(Collectors.joining("; ")));
    }
    return CheckResult.pass(
        "C1", holds + " holds on " + byResource.size() + " resource(s), none overlapping");
  }

  private static String describe(String resource, Hold earlier, Hold later) {
    return String.format(
        "%s: %s/%s held until %+.3f ms after %s/%s was granted",
        resource,
        earlier.grant().jvm(),
        earlier.grant().thread(),
        (earlier.end() - later.start()) / 1e6,
        later.grant().jvm(),
        later.grant().thread());
  }
}
