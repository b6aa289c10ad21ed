package io.redlock.tck.selftest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedClass;

import io.redlock.tck.LockNodeCompatibilityKit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/**
 * The kit is itself tested: run through the JUnit Platform testkit against nodes with one known bug
 * each, it must fail the rules that cover that bug and pass the others. These runs happen inside
 * this test, so the expected failures do not fail the build.
 */
@DisplayName("The compatibility kit catches broken nodes on the right rules")
class KitCatchesDefectsTest {
  private static final Pattern RULE = Pattern.compile("^(R\\d+\\.\\d+)\\b");
  private static final Set<String> R9 = Set.of("R9.1", "R9.2", "R9.3", "R9.4", "R9.5");

  /** Release notifications: skipped on the defective nodes, which do not declare them. */
  private static final Set<String> R14 = Set.of("R14.1", "R14.2", "R14.3");

  /** What a kit without an unreachable node and without release notifications skips. */
  private static final Set<String> SKIPPED = union(union(R9, R14), Set.of("R15.4"));

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.addAll(b);
    return Set.copyOf(out);
  }

  @Test
  @DisplayName("the reference in-memory node passes every rule, none skipped")
  void referenceNodePassesEverything() {
    Outcome outcome = run(selectClass(InMemoryLockNodeCompatibilityTest.class));
    assertThat(outcome.failed()).as("failed rules").isEmpty();
    assertThat(outcome.aborted()).as("skipped rules (every hook is provided)").isEmpty();
    assertThat(outcome.succeeded()).as("passed rules").containsAll(allRules());
  }

  @Test
  @DisplayName("a correct node without optional hooks passes, and R9 skips with a reason")
  void correctNodeWithoutUnreachableHookSkipsR9WithReason() {
    Outcome outcome = run(selectClass(DefectiveNodeKits.Correct.class));
    assertThat(outcome.failed()).as("failed rules").isEmpty();
    assertThat(outcome.aborted().keySet()).as("skipped rules").isEqualTo(SKIPPED);
    assertThat(outcome.aborted().values())
        .as("reasons given for skipping")
        .allSatisfy(
            reason ->
                assertThat(reason)
                    .containsAnyOf(
                        "createUnreachableNode()", "capabilities().releaseNotifications()"));
  }

  @Test
  @DisplayName("a non-atomic get-then-put tryAcquire fails the atomicity rules R2.1-R2.3")
  void nonAtomicAcquire() {
    assertFailsOn(
        DefectiveNodeKits.NonAtomicAcquire.class, Set.of("R2.1", "R2.2", "R2.3"), Set.of("R10.1"));
  }

  @Test
  @DisplayName("a node whose keys never expire fails the expiry rules")
  void ignoresExpiry() {
    assertFailsOn(
        DefectiveNodeKits.IgnoresExpiry.class,
        Set.of("R3.2", "R3.3", "R3.4", "R4.4", "R5.1", "R5.2", "R5.3", "R5.4", "R5.5"),
        Set.of("R12.3", "R12.6", "R12.7"));
  }

  @Test
  @DisplayName("a release that ignores the token fails the compare-and-delete rules")
  void releaseIgnoresToken() {
    assertFailsOn(
        DefectiveNodeKits.ReleaseIgnoresToken.class,
        Set.of("R4.1", "R4.4", "R6.1", "R6.2", "R7.1", "R7.2", "R7.3", "R7.4", "R7.5", "R10.1"),
        Set.of());
  }

  @Test
  @DisplayName("an extend that revives expired keys fails R3.4 and R5.2")
  void extendIgnoresExpiry() {
    assertFailsOn(DefectiveNodeKits.ExtendIgnoresExpiry.class, Set.of("R3.4", "R5.2"), Set.of());
  }

  @Test
  @DisplayName("validating arguments in the reply instead of the call fails R8.1-R8.4")
  void validatesInReply() {
    assertFailsOn(
        DefectiveNodeKits.ValidatesInReply.class,
        Set.of("R8.1", "R8.2", "R8.3", "R8.4", "R12.10"),
        Set.of());
  }

  @Test
  @DisplayName("a password in name() fails R11.4")
  void passwordInName() {
    assertFailsOn(DefectiveNodeKits.PasswordInName.class, Set.of("R11.4"), Set.of());
  }

  @Test
  @DisplayName("case-insensitive keys fail the exact-comparison rule R6.3")
  void caseInsensitiveKeys() {
    assertFailsOn(DefectiveNodeKits.CaseInsensitiveKeys.class, Set.of("R6.3"), Set.of());
  }

  @Test
  @DisplayName(
      "a fencing counter lost with its key fails the rules that it survives release/expiry")
  void fenceLostWithKey() {
    assertFailsOnOptionalRules(
        DefectiveNodeKits.FenceLostWithKey.class,
        Set.of("R12.2", "R12.3", "R12.8"),
        Set.of("R12.4", "R12.5", "R12.6", "R12.9"));
  }

  @Test
  @DisplayName("a fencing counter incremented outside the insert's atomic step fails R12.9")
  void nonAtomicFence() {
    assertFailsOnOptionalRules(DefectiveNodeKits.NonAtomicFence.class, Set.of("R12.9"), Set.of());
  }

  @Test
  @DisplayName("a raiseFence that ignores the token fails R12.6")
  void raiseIgnoresToken() {
    assertFailsOnOptionalRules(
        DefectiveNodeKits.RaiseIgnoresToken.class, Set.of("R12.6"), Set.of());
  }

  @Test
  @DisplayName("a node that declares release notifications but sends none fails R14.1")
  void silentReleaseNotifications() {
    List<DiscoverySelector> selectors =
        List.of(LockNodeCompatibilityKit.class.getDeclaredClasses()).stream()
            .filter(c -> c.getSimpleName().startsWith("R14"))
            .map(
                c ->
                    (DiscoverySelector)
                        selectNestedClass(
                            List.of(DefectiveNodeKits.SilentReleaseNotifications.class), c))
            .toList();
    assertThat(selectors).as("the kit's R14 group").hasSize(1);
    EngineExecutionResults results =
        EngineTestKit.engine("junit-jupiter").selectors(selectors).execute();
    Map<String, String> failed = byRule(results.testEvents().failed().list());
    assertThat(failed.keySet()).contains("R14.1").isSubsetOf(Set.of("R14.1", "R14.2"));
    assertThat(failed.get("R14.1")).contains("heard none of the releases");
  }

  @Test
  @DisplayName("a serverTime() in the wrong unit (µs read as ms) fails R15.1 and R15.2")
  void clockInWrongUnits() {
    Map<String, String> failed = runR15(DefectiveNodeKits.ClockInWrongUnits.class);
    assertThat(failed.keySet()).isEqualTo(Set.of("R15.1", "R15.2"));
    assertThat(failed.get("R15.1")).contains("check the unit", "off by");
  }

  @Test
  @DisplayName("a serverTime() that answers a cached time fails R15.2 only")
  void cachedClock() {
    Map<String, String> failed = runR15(DefectiveNodeKits.CachedClock.class);
    assertThat(failed.keySet()).isEqualTo(Set.of("R15.2"));
    assertThat(failed.get("R15.2")).contains("time between two serverTime() reads");
  }

  /**
   * Runs only the kit's R15 group on {@code kit}: the rules that failed, with their messages. R15.4
   * skips (the defective kits have no unreachable node); nothing else may.
   */
  private static Map<String, String> runR15(Class<? extends LockNodeCompatibilityKit> kit) {
    List<DiscoverySelector> selectors =
        List.of(LockNodeCompatibilityKit.class.getDeclaredClasses()).stream()
            .filter(c -> c.getSimpleName().startsWith("R15"))
            .map(c -> (DiscoverySelector) selectNestedClass(List.of(kit), c))
            .toList();
    assertThat(selectors).as("the kit's R15 group").hasSize(1);
    EngineExecutionResults results =
        EngineTestKit.engine("junit-jupiter").selectors(selectors).execute();
    assertThat(results.containerEvents().failed().list())
        .as("containers that failed (kit or setup errors)")
        .isEmpty();
    assertThat(byRule(results.testEvents().aborted().list()).keySet())
        .as("rules skipped for %s", kit.getSimpleName())
        .isEqualTo(Set.of("R15.4"));
    return byRule(results.testEvents().failed().list());
  }

  @Test
  @DisplayName("a status cached across a restart of the store fails R13.3")
  void staleStatus() {
    assertFailsOnOptionalRules(DefectiveNodeKits.StaleStatus.class, Set.of("R13.3"), Set.of());
  }

  @Test
  @DisplayName("an unreachable node that answers false fails every failure-reporting rule")
  void unreachableAnswersFalse() {
    Outcome outcome = runR9(DefectiveNodeKits.UnreachableAnswersFalse.class);
    assertThat(outcome.failed().keySet()).isEqualTo(R9);
    assertThat(outcome.failed().values())
        .allSatisfy(message -> assertThat(message).contains("instead of throwing"));
  }

  @Test
  @DisplayName("an unreachable node that hangs fails every failure-reporting rule")
  void unreachableHangs() {
    Outcome outcome = runR9(DefectiveNodeKits.UnreachableHangs.class);
    assertThat(outcome.failed().keySet()).isEqualTo(R9);
    assertThat(outcome.failed().values())
        .allSatisfy(message -> assertThat(message).contains("hangs"));
  }

  /** The rule failures of one run and their messages, the skipped rules and their reasons. */
  private record Outcome(
      Map<String, String> failed, Map<String, String> aborted, Set<String> succeeded) {}

  private static void assertFailsOn(
      Class<? extends LockNodeCompatibilityKit> kit, Set<String> expected, Set<String> tolerated) {
    Outcome outcome = run(selectClass(kit));
    Set<String> allowed = new TreeSet<>(expected);
    allowed.addAll(tolerated);
    assertThat(outcome.failed().keySet())
        .as("rules failed by %s (messages: %s)", kit.getSimpleName(), outcome.failed())
        .containsAll(expected)
        .isSubsetOf(allowed);
    assertThat(outcome.aborted().keySet())
        .as("rules skipped for %s (only R9 and R14 lack their hook)", kit.getSimpleName())
        .isSubsetOf(SKIPPED);
  }

  /**
   * Like {@link #assertFailsOn} for a defect of the optional parts: runs only R12 and R13 (the
   * other rules do not touch fencing or status, and running them all again would only cost time).
   */
  private static void assertFailsOnOptionalRules(
      Class<? extends LockNodeCompatibilityKit> kit, Set<String> expected, Set<String> tolerated) {
    List<DiscoverySelector> selectors =
        List.of(LockNodeCompatibilityKit.class.getDeclaredClasses()).stream()
            .filter(c -> c.getSimpleName().startsWith("R12") || c.getSimpleName().startsWith("R13"))
            .map(c -> (DiscoverySelector) selectNestedClass(List.of(kit), c))
            .toList();
    assertThat(selectors).as("the kit's R12 and R13 groups").hasSize(2);
    EngineExecutionResults results =
        EngineTestKit.engine("junit-jupiter").selectors(selectors).execute();
    assertThat(results.containerEvents().failed().list())
        .as("containers that failed (kit or setup errors)")
        .isEmpty();
    Map<String, String> failed = byRule(results.testEvents().failed().list());
    Set<String> allowed = new TreeSet<>(expected);
    allowed.addAll(tolerated);
    assertThat(failed.keySet())
        .as("rules failed by %s (messages: %s)", kit.getSimpleName(), failed)
        .containsAll(expected)
        .isSubsetOf(allowed);
    assertThat(byRule(results.testEvents().aborted().list()))
        .as("rules skipped for %s", kit.getSimpleName())
        .isEmpty();
  }

  private static Outcome runR9(Class<? extends LockNodeCompatibilityKit> kit) {
    Class<?> r9 =
        List.of(LockNodeCompatibilityKit.class.getDeclaredClasses()).stream()
            .filter(c -> c.getSimpleName().startsWith("R9"))
            .findFirst()
            .orElseThrow();
    Outcome outcome = run(selectNestedClass(List.of(kit), r9));
    assertThat(outcome.succeeded())
        .as("R9 rules that passed for %s", kit.getSimpleName())
        .isEmpty();
    return outcome;
  }

  private static Outcome run(DiscoverySelector selector) {
    EngineExecutionResults results =
        EngineTestKit.engine("junit-jupiter").selectors(selector).execute();
    assertThat(results.containerEvents().failed().list())
        .as("containers that failed (kit or setup errors)")
        .isEmpty();
    return new Outcome(
        byRule(results.testEvents().failed().list()),
        byRule(results.testEvents().aborted().list()),
        byRule(results.testEvents().succeeded().list()).keySet());
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

  /** Every rule number of the kit, read from its display names. */
  private static Set<String> allRules() {
    return List.of(LockNodeCompatibilityKit.class.getDeclaredClasses()).stream()
        .flatMap(c -> List.of(c.getDeclaredMethods()).stream())
        .map(m -> m.getAnnotation(DisplayName.class))
        .flatMap(d -> Optional.ofNullable(d).stream())
        .map(d -> RULE.matcher(d.value()))
        .filter(Matcher::find)
        .map(m -> m.group(1))
        .collect(Collectors.toCollection(TreeSet::new));
  }
}
