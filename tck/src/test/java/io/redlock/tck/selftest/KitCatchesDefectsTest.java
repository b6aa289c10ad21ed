package io.redlock.tck.selftest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import io.redlock.tck.LockNodeCompatibilityKit;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/**
 * The kit is itself tested: run through the JUnit Platform testkit against nodes with one known bug
 * each, it must fail the rule that covers that bug (and only rules that the bug really breaks), and
 * pass correct nodes, the one with a 1-second clock included. These runs happen inside this test,
 * so the expected failures do not fail the build. A defect of one area runs only that area's rule
 * groups (R4, R12, ...), which keeps the self-test short.
 */
@DisplayName("The compatibility kit catches broken nodes on the right rules")
@Execution(ExecutionMode.CONCURRENT) // each kit has its own store; most of the time is sleeping
class KitCatchesDefectsTest {
  private static final Pattern RULE = Pattern.compile("^(R\\d+\\.\\d+)\\b");
  private static final Pattern METHOD = Pattern.compile("^r(\\d+)_\\d+_");
  private static final Set<String> R9 = Set.of("R9.1", "R9.2", "R9.3", "R9.4", "R9.5");

  /**
   * What a kit of synchronous nodes without an unreachable node and without release notifications
   * skips: R9 and R15.4 (no unreachable node), R14 (not declared), R16.2 and R16.3 (every reply is
   * there before it is awaited, so nothing can be abandoned).
   */
  private static final Set<String> SKIPPED =
      union(R9, Set.of("R14.1", "R14.2", "R14.3", "R15.4", "R16.2", "R16.3"));

  @Test
  @DisplayName("the reference in-memory node passes every rule, none skipped")
  void referenceNodePassesEverything() {
    Outcome outcome = run(InMemoryLockNodeCompatibilityTest.class);
    assertThat(outcome.failed()).as("failed rules").isEmpty();
    assertThat(outcome.aborted()).as("skipped rules (every hook is provided)").isEmpty();
    assertThat(outcome.succeeded()).as("passed rules").containsAll(allRules());
  }

  @Test
  @DisplayName("a correct node without optional hooks passes, and skips with reasons")
  void correctNodeWithoutOptionalHooksSkipsWithReasons() {
    Outcome outcome = run(DefectiveNodeKits.Correct.class);
    assertThat(outcome.failed()).as("failed rules").isEmpty();
    assertThat(outcome.aborted().keySet()).as("skipped rules").isEqualTo(SKIPPED);
    assertThat(outcome.aborted().values())
        .as("reasons given for skipping")
        .allSatisfy(
            reason ->
                assertThat(reason)
                    .containsAnyOf(
                        "createUnreachableNode()",
                        "capabilities().releaseNotifications()",
                        "answered before a zero-timeout await returned"));
  }

  @Test
  @DisplayName("a correct node on a store with a 1-second clock passes every rule")
  void coarseClockPasses() {
    Outcome outcome = run(DefectiveNodeKits.CoarseClock.class);
    assertThat(outcome.failed()).as("failed rules").isEmpty();
    assertThat(outcome.aborted().keySet())
        .as("skipped rules (R3.3 takes sub-second TTLs only; no key inspection)")
        .isEqualTo(union(SKIPPED, Set.of("R3.3", "R17.1", "R17.2", "R17.3")));
  }

  @Test
  @DisplayName("a non-atomic get-then-put tryAcquire fails the atomicity rules R2.1-R2.3")
  void nonAtomicAcquire() {
    assertFails(
        run(DefectiveNodeKits.NonAtomicAcquire.class),
        Set.of("R2.1", "R2.2", "R2.3"),
        Set.of("R4.6", "R5.8", "R10.1"));
  }

  @Test
  @DisplayName("a node whose keys never expire fails the expiry rules")
  void ignoresExpiry() {
    assertFails(
        run(DefectiveNodeKits.IgnoresExpiry.class),
        Set.of("R3.2", "R3.3", "R3.4", "R4.4", "R5.1", "R5.2", "R5.3", "R5.4", "R5.5", "R17.2"),
        Set.of("R12.3", "R12.6", "R12.7", "R12.9"));
  }

  @Test
  @DisplayName("a release that ignores the token fails the compare-and-delete rules")
  void releaseIgnoresToken() {
    assertFails(
        run(DefectiveNodeKits.ReleaseIgnoresToken.class),
        Set.of(
            "R4.1", "R4.4", "R6.1", "R6.2", "R6.3", "R6.4", "R6.5", "R7.1", "R7.2", "R7.3", "R7.4",
            "R7.5", "R10.1"),
        Set.of("R4.6"));
  }

  @Test
  @DisplayName("an extend that revives expired keys fails R3.4 and R5.2")
  void extendIgnoresExpiry() {
    assertFails(
        run(DefectiveNodeKits.ExtendIgnoresExpiry.class), Set.of("R3.4", "R5.2"), Set.of("R5.8"));
  }

  @Test
  @DisplayName("validating arguments in the reply instead of the call fails R8.1-R8.4")
  void validatesInReply() {
    assertFails(
        run(DefectiveNodeKits.ValidatesInReply.class),
        Set.of("R8.1", "R8.2", "R8.3", "R8.4", "R12.10"),
        Set.of());
  }

  @Test
  @DisplayName("a password in name() fails R11.4")
  void passwordInName() {
    assertFails(run(DefectiveNodeKits.PasswordInName.class), Set.of("R11.4"), Set.of());
  }

  @Test
  @DisplayName("case-insensitive keys fail the exact-comparison rule R6.3")
  void caseInsensitiveKeys() {
    assertFails(run(DefectiveNodeKits.CaseInsensitiveKeys.class), Set.of("R6.3"), Set.of());
  }

  @Test
  @DisplayName("keys that end early (100 ms before their TTL) fail R3.1")
  void expiresEarly() {
    Outcome outcome = run(DefectiveNodeKits.ExpiresEarly.class, "R3", "R5");
    // R5.3 too, when a busy machine delays an extend into the 100 ms the key lost
    assertFails(outcome, Set.of("R3.1"), Set.of("R3.5", "R5.3", "R5.7"));
    assertThat(outcome.failed().get("R3.1")).contains("the key ended early");
  }

  @Test
  @DisplayName("a release that reads, then deletes by key alone, fails R4.6")
  void nonAtomicRelease() {
    Outcome outcome = run(DefectiveNodeKits.NonAtomicRelease.class, "R4");
    assertFails(outcome, Set.of("R4.6"), Set.of());
    assertThat(outcome.failed().get("R4.6")).contains("deleted the new owner's key");
  }

  @Test
  @DisplayName("an extend that reads, then rewrites the key, fails R5.8")
  void nonAtomicExtend() {
    Outcome outcome = run(DefectiveNodeKits.NonAtomicExtend.class, "R5");
    assertFails(outcome, Set.of("R5.8"), Set.of());
    assertThat(outcome.failed().get("R5.8")).contains("both now believe they hold it");
  }

  @Test
  @DisplayName("keys truncated to 64 or 255 characters fail R6.4")
  void truncatedKeys() {
    assertFails(run(DefectiveNodeKits.KeysTruncatedTo64.class, "R6"), Set.of("R6.4"), Set.of());
    assertFails(run(DefectiveNodeKits.KeysTruncatedTo255.class, "R6"), Set.of("R6.4"), Set.of());
  }

  @Test
  @DisplayName("keys stored by their 32-bit hashCode fail R6.5")
  void hashedKeys() {
    assertFails(run(DefectiveNodeKits.KeysHashedTo32Bits.class, "R6"), Set.of("R6.5"), Set.of());
  }

  @Test
  @DisplayName(
      "a fencing counter lost with its key fails the rules that it survives release/expiry")
  void fenceLostWithKey() {
    assertFails(
        run(DefectiveNodeKits.FenceLostWithKey.class, "R12", "R13"),
        Set.of("R12.2", "R12.3", "R12.5"),
        Set.of("R12.4", "R12.6", "R12.8", "R12.9"));
  }

  @Test
  @DisplayName("a fencing counter that starts again when an expired key is taken over fails R12.3")
  void fenceLostOnExpiry() {
    assertFails(
        run(DefectiveNodeKits.FenceLostOnExpiry.class, "R12"),
        Set.of("R12.3"),
        Set.of("R12.6", "R12.9"));
  }

  @Test
  @DisplayName("a fencing counter dropped by a plain tryAcquire fails R12.4")
  void fenceResetByPlainAcquire() {
    assertFails(
        run(DefectiveNodeKits.FenceResetByPlainAcquire.class, "R12"), Set.of("R12.4"), Set.of());
  }

  @Test
  @DisplayName("a fencing counter incremented by a second command after the insert fails R12.9")
  void nonAtomicFence() {
    assertFails(run(DefectiveNodeKits.NonAtomicFence.class, "R12"), Set.of("R12.9"), Set.of());
  }

  @Test
  @DisplayName("a raiseFence that ignores the token fails R12.6")
  void raiseIgnoresToken() {
    assertFails(run(DefectiveNodeKits.RaiseIgnoresToken.class, "R12"), Set.of("R12.6"), Set.of());
  }

  @Test
  @DisplayName("a status cached across a restart of the store fails R13.3")
  void staleStatus() {
    assertFails(run(DefectiveNodeKits.StaleStatus.class, "R13"), Set.of("R13.3"), Set.of());
  }

  @Test
  @DisplayName("an uptime rounded up to whole seconds fails R13.3")
  void uptimeRoundedUp() {
    Outcome outcome = run(DefectiveNodeKits.UptimeRoundedUp.class, "R13");
    assertFails(outcome, Set.of("R13.3"), Set.of());
    assertThat(outcome.failed().get("R13.3")).contains("rounded down, never up");
  }

  @Test
  @DisplayName("a node that declares release notifications but sends none fails R14.1")
  void silentReleaseNotifications() {
    Outcome outcome = run(DefectiveNodeKits.SilentReleaseNotifications.class, "R14");
    assertFails(outcome, Set.of("R14.1"), Set.of("R14.2"));
    assertThat(outcome.failed().get("R14.1")).contains("heard none of the releases");
  }

  @Test
  @DisplayName("a serverTime() in the wrong unit (µs read as ms) fails R15.1 and R15.2")
  void clockInWrongUnits() {
    Outcome outcome = run(DefectiveNodeKits.ClockInWrongUnits.class, "R15");
    assertFails(outcome, Set.of("R15.1", "R15.2"), Set.of());
    assertThat(outcome.failed().get("R15.1")).contains("check the unit", "off by");
  }

  @Test
  @DisplayName("a serverTime() that answers a cached time fails R15.2 only")
  void cachedClock() {
    Outcome outcome = run(DefectiveNodeKits.CachedClock.class, "R15");
    assertFails(outcome, Set.of("R15.2"), Set.of());
    assertThat(outcome.failed().get("R15.2")).contains("time between two serverTime() reads");
  }

  @Test
  @DisplayName("an await that rejects a zero timeout fails R16.1")
  void zeroTimeoutRejected() {
    Outcome outcome = run(DefectiveNodeKits.ZeroTimeoutRejected.class, "R16");
    assertFails(outcome, Set.of("R16.1"), Set.of("R16.2", "R16.3"));
    assertThat(outcome.failed().get("R16.1")).contains("must answer or throw NodeTimeoutException");
  }

  @Test
  @DisplayName("an abandoned reply that never ends, or ends twice, fails R16.2")
  void abandonEndsWrongly() {
    assertFails(
        run(DefectiveNodeKits.AbandonNeverEnds.class, "R16"), Set.of("R16.2"), Set.of("R16.3"));
    assertFails(run(DefectiveNodeKits.AbandonEndsTwice.class, "R16"), Set.of("R16.2"), Set.of());
  }

  @Test
  @DisplayName("a call reported dropped that still runs fails R16.3")
  void abandonRunsDroppedCall() {
    Outcome outcome = run(DefectiveNodeKits.AbandonRunsDroppedCall.class, "R16");
    assertFails(outcome, Set.of("R16.3"), Set.of());
    assertThat(outcome.failed().get("R16.3")).contains("was run all the same");
  }

  @Test
  @DisplayName("an inspect() that shows expired keys fails R17.2 only")
  void inspectIgnoresExpiry() {
    Outcome outcome = run(DefectiveNodeKits.InspectIgnoresExpiry.class, "R17");
    assertFails(outcome, Set.of("R17.2"), Set.of());
    assertThat(outcome.failed().get("R17.2")).contains("whose TTL ran out");
  }

  @Test
  @DisplayName("an unreachable node that answers false fails every failure-reporting rule")
  void unreachableAnswersFalse() {
    Outcome outcome = run(DefectiveNodeKits.UnreachableAnswersFalse.class, "R9");
    assertThat(outcome.failed().keySet()).isEqualTo(R9);
    assertThat(outcome.failed().values())
        .allSatisfy(message -> assertThat(message).contains("instead of throwing"));
  }

  @Test
  @DisplayName("an unreachable node that hangs fails every failure-reporting rule")
  void unreachableHangs() {
    Outcome outcome = run(DefectiveNodeKits.UnreachableHangs.class, "R9");
    assertThat(outcome.failed().keySet()).isEqualTo(R9);
    assertThat(outcome.failed().values())
        .allSatisfy(message -> assertThat(message).contains("hangs"));
  }

  /** The rule failures of one run and their messages, the skipped rules and their reasons. */
  private record Outcome(
      Map<String, String> failed, Map<String, String> aborted, Set<String> succeeded) {}

  /**
   * Runs the rules of {@code groups} ("R12", ...) on {@code kit}, or all of them if none is named.
   */
  private static Outcome run(Class<? extends LockNodeCompatibilityKit> kit, String... groups) {
    List<DiscoverySelector> selectors = new ArrayList<>();
    if (groups.length == 0) {
      selectors.add(selectClass(kit));
    } else {
      Set<String> wanted = Set.of(groups);
      for (Method m : ruleMethods()) {
        Matcher number = METHOD.matcher(m.getName());
        if (number.find() && wanted.contains("R" + number.group(1))) {
          selectors.add(selectMethod(kit, m));
        }
      }
      assertThat(selectors).as("rules of %s", wanted).isNotEmpty();
    }
    EngineExecutionResults results =
        EngineTestKit.engine("junit-jupiter").selectors(selectors).execute();
    assertThat(results.containerEvents().failed().list())
        .as("containers that failed (kit or setup errors)")
        .isEmpty();
    return new Outcome(
        byRule(results.testEvents().failed().list()),
        byRule(results.testEvents().aborted().list()),
        byRule(results.testEvents().succeeded().list()).keySet());
  }

  /** Fails unless every expected rule failed, and no rule outside expected and tolerated did. */
  private static void assertFails(Outcome outcome, Set<String> expected, Set<String> tolerated) {
    assertThat(outcome.failed().keySet())
        .as("rules failed (messages: %s)", outcome.failed())
        .containsAll(expected)
        .isSubsetOf(union(expected, tolerated));
    assertThat(outcome.aborted().keySet()).as("rules skipped").isSubsetOf(SKIPPED);
  }

  /** Rule number -> first message, for test events whose display name starts with a rule. */
  private static Map<String, String> byRule(List<Event> events) {
    Map<String, String> out = new TreeMap<>();
    for (Event event : events) {
      Matcher m = RULE.matcher(event.getTestDescriptor().getDisplayName());
      assertThat(m.find())
          .as("test without a rule number: %s", event.getTestDescriptor().getDisplayName())
          .isTrue();
      String message =
          event
              .getPayload(TestExecutionResult.class)
              .flatMap(TestExecutionResult::getThrowable)
              .map(Throwable::getMessage)
              .map(String::valueOf)
              .map(text -> text.length() > 400 ? text.substring(0, 400) + "..." : text)
              .orElse("");
      out.putIfAbsent(m.group(1), message);
    }
    return out;
  }

  /** The kit's rule methods: every method of its rule groups that carries a rule number. */
  private static List<Method> ruleMethods() {
    List<Method> out = new ArrayList<>();
    for (Method m : LockNodeCompatibilityKit.class.getMethods()) {
      if (METHOD.matcher(m.getName()).find()) {
        out.add(m);
      }
    }
    return out;
  }

  /** Every rule number of the kit, read from its display names. */
  private static Set<String> allRules() {
    Set<String> out = new TreeSet<>();
    for (Method m : ruleMethods()) {
      DisplayName name = m.getAnnotation(DisplayName.class);
      Matcher rule = RULE.matcher(name == null ? "" : name.value());
      assertThat(rule.find()).as("display name of %s", m).isTrue();
      out.add(rule.group(1));
    }
    return out;
  }

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.addAll(b);
    return Set.copyOf(out);
  }
}
