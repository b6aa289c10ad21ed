package io.redlock;

import java.time.Duration;
import java.util.Objects;

/**
 * The timing, retry and safety settings of a {@link Redlock}. Immutable; use {@link #defaults()}
 * and the {@code with...} methods, or the builder.
 *
 * @param driftFactor fraction of the TTL subtracted from every validity for clock drift between
 *     nodes and this machine (default 0.01)
 * @param driftBuffer constant subtracted from every validity (default 2 ms)
 * @param nodeTimeout how long one node may take to answer one call, or {@code null} for the
 *     default: TTL/50 clamped to [20 ms, 1 s] (200 ms for a 10 s TTL: small beside the TTL, as the
 *     algorithm advises, and enough for a database under load; a node that is down is not waited
 *     for in any case, see {@link NodeHealth})
 * @param retryAttempts attempts made by {@code tryAcquire}, including the first (default 3)
 * @param retryDelayMin shortest random pause between attempts (default 50 ms)
 * @param retryDelayMax longest random pause between attempts (default 250 ms)
 * @param minValidity a lease with less validity than this after acquisition is given up at once
 *     (default 1 ms: any positive validity)
 * @param maxExtensions how many times one lease may be extended (default 10,000)
 * @param fencing whether every lease carries a fencing token ({@link Lease#fencingToken()}): one
 *     more round trip per acquisition, and every node must declare fencing counters (default off)
 * @param restartQuarantine the longest TTL the application uses, which switches on restart
 *     quarantine: a node whose lock state is not durable counts only once it has been up for this
 *     long (plus the drift allowance), and no lease may ask for a longer TTL; {@code null} for off
 *     (the default). See {@link RedlockBuilder#restartQuarantine(Duration)}.
 * @param strictNodes whether a node that fails in a way no retry fixes (a wrong password, a missing
 *     table, an unknown host, TLS refused) fails {@code build()} and the acquisition even when the
 *     other nodes make a majority (default on; off: such a node is outvoted, logged once at WARN
 *     and listed in {@link Lease#failedNodes()})
 * @param sharedServers whether nodes may be one server under several names or databases (default
 *     off: {@code build()} refuses nodes that report the same incarnation, since that server's loss
 *     takes several votes); for tests and demos only
 */
public record RedlockSettings(
    double driftFactor,
    Duration driftBuffer,
    Duration nodeTimeout,
    int retryAttempts,
    Duration retryDelayMin,
    Duration retryDelayMax,
    Duration minValidity,
    int maxExtensions,
    boolean fencing,
    Duration restartQuarantine,
    boolean strictNodes,
    boolean sharedServers) {

  private static final Duration MIN_AUTO_TIMEOUT = Duration.ofMillis(20);
  private static final Duration MAX_AUTO_TIMEOUT = Duration.ofSeconds(1);

  /** Far beyond any sensible lock TTL, and far from overflowing nanosecond arithmetic. */
  private static final Duration MAX_QUARANTINE = Duration.ofDays(365);

  /** Validates every setting; the message names the setting and the accepted range. */
  public RedlockSettings {
    if (!(driftFactor >= 0 && driftFactor < 1)) {
      throw new IllegalArgumentException(
          "driftFactor must be in [0, 1) (a fraction of the TTL, typically 0.01), got "
              + driftFactor);
    }
    requireNonNegative("driftBuffer", driftBuffer);
    if (nodeTimeout != null && (nodeTimeout.isNegative() || nodeTimeout.isZero())) {
      throw new IllegalArgumentException(
          "nodeTimeout must be positive (or null for the TTL-based default), got " + nodeTimeout);
    }
    if (retryAttempts < 1) {
      throw new IllegalArgumentException(
          "retryAttempts must be at least 1 (the first attempt counts), got " + retryAttempts);
    }
    requireNonNegative("retryDelayMin", retryDelayMin);
    requireNonNegative("retryDelayMax", retryDelayMax);
    if (retryDelayMax.compareTo(retryDelayMin) < 0) {
      throw new IllegalArgumentException(
          "retryDelayMax ("
              + retryDelayMax.toMillis()
              + " ms) must not be shorter than retryDelayMin ("
              + retryDelayMin.toMillis()
              + " ms)");
    }
    requireNonNegative("minValidity", minValidity);
    if (maxExtensions < 0) {
      throw new IllegalArgumentException("maxExtensions must be >= 0, got " + maxExtensions);
    }
    if (restartQuarantine != null
        && (restartQuarantine.isNegative() || restartQuarantine.isZero())) {
      throw new IllegalArgumentException(
          "restartQuarantine must be positive (the longest TTL the application uses), or null for"
              + " off; got "
              + restartQuarantine);
    }
    if (restartQuarantine != null && restartQuarantine.compareTo(MAX_QUARANTINE) > 0) {
      throw new IllegalArgumentException(
          "restartQuarantine must be the longest TTL the application uses, at most "
              + MAX_QUARANTINE.toDays()
              + " days; got "
              + restartQuarantine);
    }
  }

  /** The defaults described on each component. */
  public static RedlockSettings defaults() {
    return new RedlockSettings(
        0.01,
        Duration.ofMillis(2),
        null,
        3,
        Duration.ofMillis(50),
        Duration.ofMillis(250),
        Duration.ofMillis(1),
        10_000,
        false,
        null,
        true,
        false);
  }

  /** The per-node timeout used for calls on a lock of this TTL. */
  public Duration nodeTimeoutFor(Duration ttl) {
    if (nodeTimeout != null) {
      return nodeTimeout;
    }
    Duration auto = ttl.dividedBy(50);
    if (auto.compareTo(MIN_AUTO_TIMEOUT) < 0) {
      return MIN_AUTO_TIMEOUT;
    }
    return auto.compareTo(MAX_AUTO_TIMEOUT) > 0 ? MAX_AUTO_TIMEOUT : auto;
  }

  /** The drift allowance subtracted from the validity of a lock of this TTL. */
  public Duration driftFor(Duration ttl) {
    return Duration.ofNanos((long) (ttl.toNanos() * driftFactor)).plus(driftBuffer);
  }

  /** A copy with another drift factor. */
  public RedlockSettings withDriftFactor(double value) {
    Copy c = new Copy(this);
    c.driftFactor = value;
    return c.build();
  }

  /** A copy with another drift buffer. */
  public RedlockSettings withDriftBuffer(Duration value) {
    Copy c = new Copy(this);
    c.driftBuffer = value;
    return c.build();
  }

  /** A copy with another per-node timeout ({@code null} for the TTL-based default). */
  public RedlockSettings withNodeTimeout(Duration value) {
    Copy c = new Copy(this);
    c.nodeTimeout = value;
    return c.build();
  }

  /** A copy with other retry settings. */
  public RedlockSettings withRetry(int attempts, Duration delayMin, Duration delayMax) {
    Copy c = new Copy(this);
    c.retryAttempts = attempts;
    c.retryDelayMin = delayMin;
    c.retryDelayMax = delayMax;
    return c.build();
  }

  /** A copy with another minimum validity. */
  public RedlockSettings withMinValidity(Duration value) {
    Copy c = new Copy(this);
    c.minValidity = value;
    return c.build();
  }

  /** A copy with another maximum number of extensions per lease. */
  public RedlockSettings withMaxExtensions(int value) {
    Copy c = new Copy(this);
    c.maxExtensions = value;
    return c.build();
  }

  /** A copy with fencing tokens on or off. */
  public RedlockSettings withFencing(boolean value) {
    Copy c = new Copy(this);
    c.fencing = value;
    return c.build();
  }

  /**
   * A copy with restart quarantine for this maximum TTL, or off for {@code null}; see {@link
   * RedlockBuilder#restartQuarantine(Duration)}.
   */
  public RedlockSettings withRestartQuarantine(Duration maxTtl) {
    Copy c = new Copy(this);
    c.restartQuarantine = maxTtl;
    return c.build();
  }

  /** A copy in which a node failing non-transiently fails the acquisition, or not. */
  public RedlockSettings withStrictNodes(boolean value) {
    Copy c = new Copy(this);
    c.strictNodes = value;
    return c.build();
  }

  /** A copy that allows nodes on one server (tests, demos), or refuses them at build. */
  public RedlockSettings withSharedServers(boolean value) {
    Copy c = new Copy(this);
    c.sharedServers = value;
    return c.build();
  }

  /** True if restart quarantine is on. */
  public boolean restartQuarantineEnabled() {
    return restartQuarantine != null;
  }

  /** A mutable copy for the {@code with...} methods; the record's constructor validates. */
  private static final class Copy {
    double driftFactor;
    Duration driftBuffer;
    Duration nodeTimeout;
    int retryAttempts;
    Duration retryDelayMin;
    Duration retryDelayMax;
    Duration minValidity;
    int maxExtensions;
    boolean fencing;
    Duration restartQuarantine;
    boolean strictNodes;
    boolean sharedServers;

    Copy(RedlockSettings s) {
      driftFactor = s.driftFactor;
      driftBuffer = s.driftBuffer;
      nodeTimeout = s.nodeTimeout;
      retryAttempts = s.retryAttempts;
      retryDelayMin = s.retryDelayMin;
      retryDelayMax = s.retryDelayMax;
      minValidity = s.minValidity;
      maxExtensions = s.maxExtensions;
      fencing = s.fencing;
      restartQuarantine = s.restartQuarantine;
      strictNodes = s.strictNodes;
      sharedServers = s.sharedServers;
    }

    RedlockSettings build() {
      return new RedlockSettings(
          driftFactor,
          driftBuffer,
          nodeTimeout,
          retryAttempts,
          retryDelayMin,
          retryDelayMax,
          minValidity,
          maxExtensions,
          fencing,
          restartQuarantine,
          strictNodes,
          sharedServers);
    }
  }

  private static void requireNonNegative(String name, Duration value) {
    Objects.requireNonNull(value, name + " must not be null");
    if (value.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative, got " + value);
    }
  }
}
