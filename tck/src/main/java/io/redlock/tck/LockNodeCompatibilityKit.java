package io.redlock.tck;

import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The compatibility kit for {@link LockNode} backends: every rule of the {@code LockNode} contract,
 * checked against a real store. The rules are numbered and explained in {@code tck/SPEC.md}.
 *
 * <h2>Use</h2>
 *
 * <p>Add {@code io.redlock:redlock-tck} as a test dependency, extend the kit in your backend's
 * tests and say how to open a node on the store under test:
 *
 * <pre>{@code
 * class RedisLockNodeTckTest extends LockNodeCompatibilityKit {
 *   @Override protected LockNode createNode() {
 *     return RedisLockNode.fromUri("redis://127.0.0.1:" + port);
 *   }
 * }
 * }</pre>
 *
 * <p>Run it like any test class ({@code ./mvnw verify}): every rule is a test method of your class,
 * named after the rule, e.g. "R4.4 the old token cannot delete the new owner's key after expiry",
 * and counted under your class by Surefire, Failsafe and Gradle alike. {@code tck/SPEC.md} says,
 * under each rule's number, what the rule checks and what to check when it fails.
 *
 * <p>{@link #createNode()} must return a <em>new</em> node (a separate client) connected to the
 * <em>same</em> store on every call: the kit races several of them against each other, and closes
 * every node it creates. Start the server in a static {@code @BeforeAll} of your subclass (or reuse
 * a shared one: every test uses fresh random keys under {@link #keyPrefix()} and releases what it
 * acquired).
 *
 * <p>Optional hooks switch on more rules; a rule whose hook is missing is skipped with a message
 * that names the hook, never silently:
 *
 * <ul>
 *   <li>{@link #keyInspector()}: a backdoor that reads a key's owner and remaining TTL on the
 *       server (rules R3.5, R5.7 and extra checks in R1, R4 and R7);
 *   <li>{@link #createUnreachableNode()}: a node pointed at an address where nothing answers (rules
 *       R9.x and R15.4: failures are exceptions within a bounded time);
 *   <li>{@link #configuredSecret()}: the password your nodes are configured with, so that the kit
 *       can check it never shows in names or messages (R9.4, R11.4);
 *   <li>{@link #restartStore()}: crash and restart the store (R12.11 and R13.3: fencing counters
 *       and status across a restart);
 *   <li>{@link #expiryTolerance()} (default {@value #DEFAULT_EXPIRY_TOLERANCE_MILLIS} ms), {@link
 *       #clockTolerance()} (default {@value #DEFAULT_CLOCK_TOLERANCE_SECONDS} s), {@link
 *       #replyTimeout()}, {@link #failureBound()}, {@link #keyPrefix()}: timing and naming.
 * </ul>
 *
 * <p>The optional parts of the SPI (R12 fencing counters, R13 status, R14 release notifications,
 * R15 reads of the store's clock) skip with a reason on a node whose {@link NodeCapabilities} does
 * not declare them. Timing rules scale with the node's declared {@code ttlPrecision}: a key must
 * never end before its TTL minus one precision step, and must be gone by its TTL plus one step plus
 * {@link #expiryTolerance()}. Nothing in the kit measures speed.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@TestMethodOrder(ByRule.class)
@ExtendWith(Harness.Resolver.class)
public abstract class LockNodeCompatibilityKit
    implements R0Setup,
        R1ConditionalInsert,
        R2Atomicity,
        R3Expiry,
        R4CompareAndDelete,
        R5CompareAndExtend,
        R6KeyIsolation,
        R7UnusualText,
        R8InputValidation,
        R9FailureReporting,
        R10ThreadSafety,
        R11Lifecycle,
        R12Fencing,
        R13Status,
        R14ReleaseNotifications,
        R15StoreClock,
        R16Replies,
        R17Inspection {

  /** The default of {@link #expiryTolerance()}, in milliseconds. */
  public static final long DEFAULT_EXPIRY_TOLERANCE_MILLIS = 250;

  /** The default of {@link #clockTolerance()}, in seconds. */
  public static final long DEFAULT_CLOCK_TOLERANCE_SECONDS = 5;

  /** The per-test state and helpers that every rule is handed. */
  final Harness harness = new Harness(this);

  /**
   * Opens a new node on the store under test. Every call must return a <em>new</em> instance (a
   * separate client with its own connections) connected to the <em>same</em> store. The kit closes
   * every node it gets from here.
   */
  protected abstract LockNode createNode();

  /**
   * A backdoor that reads keys on the store under test without going through a {@link LockNode};
   * empty by default, which skips the rules that need it. Called at most once per test; the kit
   * closes what it returns at the end of the test.
   */
  protected Optional<KeyInspector> keyInspector() {
    return Optional.empty();
  }

  /**
   * A node configured like {@link #createNode()} but pointed at an address where nothing answers (a
   * closed loopback port, say); empty by default, which skips rules R9.x. It must be created
   * without contacting the store (a node that cannot be opened while its server is down would stop
   * a whole quorum from starting), and its operations must then fail. The kit closes it.
   */
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.empty();
  }

  /**
   * How late a key may still count as held after its TTL plus one precision step, and how long a
   * late answer may take: the latency and scheduling noise of a busy machine. Default {@value
   * #DEFAULT_EXPIRY_TOLERANCE_MILLIS} ms. It applies to the late side only: no tolerance lets a key
   * end before its TTL minus one precision step. A store whose expiry is coarser declares a coarser
   * {@code ttlPrecision} rather than widening this.
   */
  protected Duration expiryTolerance() {
    return Duration.ofMillis(DEFAULT_EXPIRY_TOLERANCE_MILLIS);
  }

  /**
   * How far the store's clock may be from this machine's in R15.1 ({@code serverTime()}). Default
   * {@value #DEFAULT_CLOCK_TOLERANCE_SECONDS} s: test servers run on the test machine (the same
   * clock) or on hosts kept in step by NTP. Widen it only for a store whose host clock is known to
   * be off, and say why in your subclass.
   */
  protected Duration clockTolerance() {
    return Duration.ofSeconds(DEFAULT_CLOCK_TOLERANCE_SECONDS);
  }

  /**
   * How long the kit waits for any reply ({@link Reply#await}), and for an abandoned reply to end
   * (R16). Default 10 s.
   */
  protected Duration replyTimeout() {
    return Duration.ofSeconds(10);
  }

  /**
   * How long an unreachable node may take, call and reply together, to report its failure (R9).
   * Default 10 s; it should be the backend's default connect timeout plus a little.
   */
  protected Duration failureBound() {
    return Duration.ofSeconds(10);
  }

  /**
   * Every key the kit uses starts with this, followed by the rule and a random UUID. Default {@code
   * "redlock-tck:"}.
   */
  protected String keyPrefix() {
    return "redlock-tck:";
  }

  /**
   * The password or other secret that {@link #createNode()} and {@link #createUnreachableNode()}
   * configure, if any; the kit then checks that it never appears in {@code name()}, {@code
   * toString()} or failure messages. Empty by default: names are then only checked for URI-shaped
   * passwords ({@link NodeUri#redact}).
   */
  protected Optional<String> configuredSecret() {
    return Optional.empty();
  }

  /**
   * Crashes and restarts the store under test, as {@code kill -9} and a fresh start would, and
   * returns true once it answers again; returns false by default, which skips the rules that need
   * it (R12.11, R13.3). Node instances open before the restart are kept and used again after it, as
   * an application would. Only called by rules for the optional parts (fencing, status).
   */
  protected boolean restartStore() {
    return false;
  }

  /** Releases every key the test acquired and closes every node it created. */
  @AfterEach
  protected final void releaseKeysAndCloseNodes() {
    harness.cleanUp();
  }
}
