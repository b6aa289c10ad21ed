package io.redlock.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.redlock.RedlockException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * The kit's per-test state and the helpers its rules share. The rule groups ({@link R0Setup} to
 * {@link R17Inspection}) are interfaces whose default methods are the tests, each taking the
 * harness as a parameter ({@link Resolver}); {@link LockNodeCompatibilityKit} implements them all,
 * so a backend extends one class and every rule is a test method of that class, counted under it by
 * every build tool (tests in {@code @Nested} classes are reported as "Tests run: 0" by Surefire).
 */
final class Harness {

  /** Rounds of every race in R2: each round is a fresh key. */
  static final int ROUNDS = 25;

  /** Threads in every race. */
  static final int THREADS = 8;

  /** Separate node instances (clients) in the multi-client races. */
  static final int CLIENTS = 4;

  /** Increments per thread in the mutual-exclusion fuzz (R2.3). */
  static final int INCREMENTS_PER_THREAD = 20;

  /** A TTL that no test outlives, for keys that must not expire while a test runs. */
  static final Duration LONG_TTL = Duration.ofSeconds(30);

  /** The TTL of keys that a test waits to see expire (rounded up to the node's precision). */
  static final Duration SHORT_TTL = Duration.ofMillis(300);

  /** How far R12 raises a counter: far beyond anything a clock-based counter reaches in a test. */
  static final long FENCE_JUMP = 1_000_000_000_000L;

  /** How long a release notification may take to arrive (R14): generous, no speed is measured. */
  static final Duration NOTIFICATION_BOUND = Duration.ofSeconds(5);

  /** R16: bursts of calls started to find a call not answered yet, and calls per burst. */
  static final int TRIES = 20;

  static final int BURST = 4;

  /** R16: how long an abandoned reply is watched after it ended, for a second ending. */
  static final Duration AFTERWARDS = Duration.ofMillis(200);

  /** How long the multi-threaded rules may take in all before they count as hanging. */
  static final Duration RACE_TIMEOUT = Duration.ofSeconds(60);

  // Per-test state, reset after each test.
  final List<LockNode> createdNodes = new CopyOnWriteArrayList<>();
  private final List<LockNode> closedNodes = new CopyOnWriteArrayList<>();
  final Queue<Held> held = new ConcurrentLinkedQueue<>();
  private LockNode primary;
  private Optional<KeyInspector> inspector;

  record Held(String key, String token) {}

  /** R16: a tryAcquire in flight, and how its abandoned reply ended. */
  record Started(String key, String token, Reply<AcquireResult> reply) {}

  record Ending(Started call, boolean ended, AtomicInteger calls, AtomicReference<Object> value) {}

  private final LockNodeCompatibilityKit kit;

  Harness(LockNodeCompatibilityKit kit) {
    this.kit = kit;
  }

  /** The kit with the backend's hooks. */
  LockNodeCompatibilityKit kit() {
    return kit;
  }

  /** Hands each rule the harness of the kit instance that runs it. */
  static final class Resolver implements ParameterResolver {
    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
      return parameter.getParameter().getType() == Harness.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
      return ((LockNodeCompatibilityKit) context.getRequiredTestInstance()).harness;
    }
  }

  /** Releases every key the test acquired and closes every node it created. */
  void cleanUp() {
    try {
      LockNode cleaner =
          held.isEmpty()
              ? null
              : primary != null && !closedNodes.contains(primary) ? primary : newNode();
      for (Held h : held) {
        // Best effort: the keys expire by themselves (no TTL here exceeds 30 s), and a node that
        // fails one release would likely hang on every other one.
        cleaner.release(h.key(), h.token()).await(kit().replyTimeout());
      }
    } catch (RuntimeException | AssertionError e) {
      // Nothing to judge here: the test's own checks did that.
    } finally {
      // R11.1 judges close, and the inspector is the subclass's test helper: cleanup goes on.
      List<AutoCloseable> closing = new ArrayList<>(createdNodes);
      if (inspector != null) {
        inspector.ifPresent(closing::add);
      }
      for (AutoCloseable c : closing) {
        try {
          c.close();
        } catch (Exception ignored) {
          // see above
        }
      }
      // Also correct under @TestInstance(PER_CLASS), where one kit instance runs many tests.
      held.clear();
      createdNodes.clear();
      closedNodes.clear();
      primary = null;
      inspector = null;
    }
  }

  /** The node most rules use, created on first use and closed after the test. */
  LockNode node() {
    if (primary == null) {
      primary = newNode();
    }
    return primary;
  }

  /**
   * A new node from {@link LockNodeCompatibilityKit#createNode()}, closed at the end of the test.
   */
  LockNode newNode() {
    LockNode n = kit().createNode();
    assertThat(n).as("createNode() returned null").isNotNull();
    createdNodes.add(n);
    return n;
  }

  /** {@value #CLIENTS} new nodes: separate clients for the multi-client races. */
  List<LockNode> clients() {
    List<LockNode> clients = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      clients.add(newNode());
    }
    return clients;
  }

  void closeByKit(LockNode n) {
    closedNodes.add(n);
    n.close();
  }

  Optional<KeyInspector> inspector() {
    if (inspector == null) {
      inspector = Objects.requireNonNull(kit().keyInspector(), "keyInspector() returned null");
    }
    return inspector;
  }

  KeyInspector requireInspector(String rule) {
    Optional<KeyInspector> backdoor = inspector();
    Assumptions.assumeTrue(
        backdoor.isPresent(),
        rule + " skipped: override keyInspector() to read keys on the server and enable it");
    return backdoor.get();
  }

  LockNode unreachableNode(String rule) {
    Optional<LockNode> down;
    try {
      down =
          Objects.requireNonNull(
              kit().createUnreachableNode(), "createUnreachableNode() returned null");
    } catch (RedlockException e) {
      throw new AssertionError(
          rule
              + ": createUnreachableNode() threw "
              + e
              + "; opening a node must not need its server (connect lazily), or a quorum could"
              + " not start while one node is down",
          e);
    }
    Assumptions.assumeTrue(
        down.isPresent(),
        rule
            + " skipped: override createUnreachableNode() with a node pointed at a closed port"
            + " to enable it");
    createdNodes.add(down.get());
    return down.get();
  }

  KeyInspector.KeyState inspectPresent(KeyInspector backdoor, String key, String rule) {
    Optional<KeyInspector.KeyState> state = backdoor.inspect(key);
    assertThat(state)
        .as("%s: the key read through the backdoor (it must be held)", rule)
        .isPresent();
    return state.get();
  }

  /**
   * The key read through the backdoor is held by {@code owner}, with a remaining TTL of {@code ttl}
   * set by a call started at {@code since}: within one precision step and 20 ms each way.
   */
  void assertServerTtl(
      KeyInspector backdoor, String key, String owner, Duration ttl, long since, String rule) {
    Duration slack = precision().plusMillis(20);
    KeyInspector.KeyState state = inspectPresent(backdoor, key, rule);
    long inspected = System.nanoTime();
    assertThat(state.owner()).as("%s: owner read through the backdoor", rule).isEqualTo(owner);
    assertThat(state.remainingTtl())
        .as("%s: the server's remaining TTL right after a call that set a TTL of %s", rule, ttl)
        .isLessThanOrEqualTo(ttl.plus(slack))
        .isGreaterThanOrEqualTo(ttl.minus(Duration.ofNanos(inspected - since)).minus(slack));
  }

  /** A fresh key for {@code rule}, acquired by {@code owner} with {@link #LONG_TTL}. */
  String heldKey(String rule, String owner) {
    return heldKey(rule, owner, LONG_TTL);
  }

  /** A fresh key for {@code rule}, acquired by {@code owner} with {@code ttl}. */
  String heldKey(String rule, String owner, Duration ttl) {
    String key = key(rule.toLowerCase(Locale.ROOT));
    assertTrue(acquire(key, owner, ttl), "%s: tryAcquire of a fresh key", rule);
    return key;
  }

  /**
   * A fresh key, unique across runs and machines: {@link LockNodeCompatibilityKit#keyPrefix()},
   * label, random UUID.
   */
  String key(String label) {
    return kit().keyPrefix() + label + ":" + UUID.randomUUID();
  }

  /** A fresh random token. */
  static String token() {
    return "tck-" + UUID.randomUUID();
  }

  /** The node's declared TTL precision: the step every timing rule scales with. */
  Duration precision() {
    return node().capabilities().ttlPrecision();
  }

  /** {@code wanted}, rounded up to a whole number of the node's precision steps. */
  Duration ttl(Duration wanted) {
    long step = precision().toNanos();
    long steps = Math.max(1, (wanted.toNanos() + step - 1) / step);
    return Duration.ofNanos(steps * step);
  }

  <T> T await(Reply<T> reply, String call) {
    assertThat(reply).as("%s returned a null Reply", call).isNotNull();
    T answer = reply.await(kit().replyTimeout());
    assertThat(answer).as("%s: Reply.await returned null", call).isNotNull();
    return answer;
  }

  /**
   * {@code tryAcquire} and await the answer; a key acquired here is released after the test.
   *
   * @return whether the key was acquired
   */
  boolean acquire(LockNode n, String key, String token, Duration ttl) {
    AcquireResult result = await(n.tryAcquire(key, token, ttl), "tryAcquire");
    if (result.acquired()) {
      held.add(new Held(key, token));
    }
    return result.acquired();
  }

  /** {@code release} and await the answer. */
  boolean release(LockNode n, String key, String token) {
    return await(n.release(key, token), "release");
  }

  /** {@code extend} and await the answer. */
  boolean extend(LockNode n, String key, String token, Duration ttl) {
    return await(n.extend(key, token, ttl), "extend");
  }

  /** {@link #acquire(LockNode, String, String, Duration)} on {@link #node()}. */
  boolean acquire(String key, String token, Duration ttl) {
    return acquire(node(), key, token, ttl);
  }

  /** {@link #release(LockNode, String, String)} on {@link #node()}. */
  boolean release(String key, String token) {
    return release(node(), key, token);
  }

  /** {@link #extend(LockNode, String, String, Duration)} on {@link #node()}. */
  boolean extend(String key, String token, Duration ttl) {
    return extend(node(), key, token, ttl);
  }

  /** Fails, described by {@code what} formatted with {@code args}, unless {@code actual}. */
  static void assertTrue(boolean actual, String what, Object... args) {
    assertThat(actual).as(what, args).isTrue();
  }

  /** Fails, described by {@code what} formatted with {@code args}, if {@code actual}. */
  static void assertFalse(boolean actual, String what, Object... args) {
    assertThat(actual).as(what, args).isFalse();
  }

  NodeStatus status(LockNode n, String rule) {
    return await(n.status(), rule + ": status()");
  }

  java.time.Instant serverTime(LockNode n, String rule) {
    return await(n.serverTime(), rule + ": serverTime()");
  }

  void requireFencing(String rule) {
    require(rule, node().capabilities().fencing(), "declare fencing counters", "fencing");
  }

  void requireReleaseNotifications(String rule) {
    require(
        rule,
        node().capabilities().releaseNotifications(),
        "push release notifications",
        "releaseNotifications");
  }

  void requireClock(String rule) {
    require(rule, node().capabilities().clock(), "read its store's clock", "clock");
  }

  void requireInspection(String rule) {
    require(rule, node().capabilities().inspection(), "look up holders", "inspection");
  }

  void requireStatus(String rule) {
    require(rule, node().capabilities().status(), "report its status", "status");
  }

  /** Skips the rule, naming the capability, unless the node declares it. */
  private static void require(String rule, boolean declared, String does, String capability) {
    Assumptions.assumeTrue(
        declared,
        rule
            + " skipped: the node does not "
            + does
            + " (capabilities()."
            + capability
            + "() is false)");
  }

  /** Restarts the store, or skips the rule if the subclass cannot. */
  void requireRestart(String rule) {
    Assumptions.assumeTrue(
        kit().restartStore(),
        rule
            + " skipped: override restartStore() to crash and restart the store under test and"
            + " enable it");
  }

  /** The key is held, by {@code owner} if the backdoor can tell. Probes with tryAcquire. */
  void assertHeldBy(String key, String owner, String context) {
    inspector()
        .ifPresent(
            backdoor ->
                assertThat(backdoor.inspect(key).map(KeyInspector.KeyState::owner))
                    .as("%s owner of the key read through the backdoor", context)
                    .contains(owner));
    assertThat(acquire(key, token(), LONG_TTL))
        .as("%s a probe tryAcquire found the key free (it must still be held)", context)
        .isFalse();
  }

  /**
   * After a key expired and another token acquired it, the old owner's {@code call} answers false
   * and the new owner keeps the key.
   */
  void assertOldOwnerRefused(String rule, String call, Race.OwnerCall ownerCall) {
    String old = token();
    Duration ttl = ttl(SHORT_TTL);
    String key = heldKey(rule, old, ttl);
    sleepPastExpiry(System.nanoTime(), ttl);
    String current = token();
    assertTrue(
        acquire(key, current, LONG_TTL), "%s: another token acquires it after its TTL", rule);
    assertFalse(
        ownerCall.call(node(), key, old),
        "%s: %s by the old token of a key now held by another",
        rule,
        call);
    assertHeldBy(key, current, rule + ": after the old token's " + call + ",");
    assertTrue(release(key, current), "%s: the new owner's release", rule);
  }

  /** The key is absent: a probe acquires it (and then gives it back). */
  void assertAbsent(String key, String context) {
    String probe = token();
    assertThat(acquire(key, probe, LONG_TTL))
        .as("%s the key must be absent, but a probe tryAcquire was refused", context)
        .isTrue();
    release(key, probe);
  }

  /**
   * Until when (in {@code System.nanoTime()}) a key acquired with {@code ttl} by a call started at
   * {@code since} must still be held: the TTL minus one precision step. The store may round a TTL
   * up, never down; the step allows for a store whose clock ticks in whole steps. There is no other
   * tolerance on this side: a key that ends early breaks Redlock's validity.
   */
  long heldUntil(long since, Duration ttl) {
    return since + ttl.minus(precision()).toNanos();
  }

  /**
   * Sleeps until a key acquired with {@code ttl}, whose acquire was answered at {@code answered}
   * ({@code System.nanoTime()}), must be gone: the TTL plus one precision step (rounding up) plus
   * {@link LockNodeCompatibilityKit#expiryTolerance()} (latency and scheduling).
   */
  void sleepPastExpiry(long answered, Duration ttl) {
    sleepUntil(answered + ttl.plus(precision()).plus(kit().expiryTolerance()).toNanos());
  }

  /**
   * Probes whether {@code key} is held, with a tryAcquire that must end before {@code deadline}
   * ({@code System.nanoTime()}) to count: empty if it ended later (too late to judge).
   */
  Optional<Boolean> heldBefore(String key, long deadline) {
    boolean probeAcquired = acquire(key, token(), LONG_TTL);
    return System.nanoTime() - deadline > 0 ? Optional.empty() : Optional.of(!probeAcquired);
  }

  /**
   * The key, acquired with {@code ttl} by a call started at {@code since}, is held {@code when}; a
   * probe that ends after {@link #heldUntil} cannot judge and fails as too slow.
   */
  void assertHeldInTime(String key, long since, Duration ttl, String when, String rule) {
    Optional<Boolean> held = heldBefore(key, heldUntil(since, ttl));
    long elapsed = (System.nanoTime() - since) / 1_000_000;
    if (held.isEmpty()) {
      fail(
          "%s: the check %s ended %d ms after the acquire started, too late to judge a TTL of %d"
              + " ms: the machine or the store is far too slow for this rule",
          rule, when, elapsed, ttl.toMillis());
    }
    assertThat(held.get())
        .as(
            "%s: a key with a TTL of %d ms was free %s (%d ms after the acquire started)",
            rule, ttl.toMillis(), when, elapsed)
        .isTrue();
  }

  static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  static void sleepUntil(long deadlineNanos) {
    long left;
    while ((left = deadlineNanos - System.nanoTime()) > 0) {
      try {
        TimeUnit.NANOSECONDS.sleep(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for a key to expire", e);
      }
    }
  }

  /** Calls {@code call}; returns what it threw, or fails if it returned (a reply or else). */
  Throwable thrownByCall(Supplier<?> call) {
    Object returned;
    try {
      returned = call.get();
    } catch (Throwable t) {
      return t;
    }
    Object outcome;
    try {
      outcome =
          returned instanceof Reply<?> reply
              ? "a reply answering " + reply.await(kit().replyTimeout())
              : returned == null ? "a null Reply" : returned;
    } catch (Throwable t) {
      outcome = "a reply that failed with " + t;
    }
    return fail(
        "the call returned %s instead of throwing from the method itself; check arguments and the"
            + " closed state before sending anything",
        outcome);
  }

  /**
   * A node that the kit closed refuses each call (by name) with an {@link IllegalStateException}
   * naming the node, thrown by the method itself.
   */
  void assertRefusedAfterClose(String rule, Map<String, Function<LockNode, ?>> calls) {
    LockNode n = newNode();
    String name = n.name();
    closeByKit(n);
    calls.forEach(
        (call, invocation) ->
            assertThat(thrownByCall(() -> invocation.apply(n)))
                .as("%s: %s after close", rule, call)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(name));
  }

  void assertRejected(String call, Supplier<?> invocation) {
    Throwable thrown = thrownByCall(invocation);
    assertThat(thrown)
        .as("%s (use io.redlock.spi.support.LockNodeArguments)", call)
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(thrown.getMessage())
        .as("%s: message of the IllegalArgumentException", call)
        .isNotBlank();
  }

  /** Runs one call on an unreachable node and checks it fails properly; returns the failure. */
  RedlockException assertFailsInTime(
      String rule, String call, Function<LockNode, Reply<?>> operation) {
    return assertFailsInTime(rule, call, operation, unreachableNode(rule));
  }

  /** Like {@link #assertFailsInTime(String, String, Function)}, on a given unreachable node. */
  RedlockException assertFailsInTime(
      String rule, String call, Function<LockNode, Reply<?>> operation, LockNode down) {
    return FailsInTime.check(kit().failureBound(), rule, call, operation, down);
  }

  void assertNoSecret(String text, String what) {
    if (text == null) {
      return;
    }
    assertThat(NodeUri.redact(text))
        .as("%s must not contain a password (it reads %s)", what, NodeUri.redact(text))
        .isEqualTo(text);
    kit()
        .configuredSecret()
        .filter(secret -> !secret.isEmpty())
        .ifPresent(
            secret ->
                assertThat(text.contains(secret))
                    .as("%s contains the configured secret", what)
                    .isFalse());
  }
}
