package io.redlock;

import java.time.Duration;
import java.util.Objects;

/**
 * The timing, retry and safety settings of a {@link Redlock}: immutable, validated when made. Each
 * setting is described, with its default, on the {@link Builder} method that sets it; {@link
 * RedlockBuilder} is such a builder, and so are the Spring Boot starter's {@code redlock.*}
 * properties.
 *
 * @param driftFactor see {@link Builder#driftFactor}
 * @param driftBuffer see {@link Builder#driftBuffer}
 * @param nodeTimeout see {@link Builder#nodeTimeout}; {@code null} for the TTL-based default
 * @param retryAttempts see {@link Builder#retry}
 * @param retryDelayMin see {@link Builder#retry}
 * @param retryDelayMax see {@link Builder#retry}
 * @param minValidity see {@link Builder#minValidity}
 * @param maxExtensions see {@link Builder#maxExtensions}
 * @param fencing see {@link Builder#fencing}
 * @param restartQuarantine see {@link Builder#restartQuarantine}; {@code null} for off
 * @param strictNodes see {@link Builder#strictNodes}
 * @param sharedServers see {@link Builder#allowSharedServers}
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
    check(
        driftFactor >= 0 && driftFactor < 1,
        "driftFactor must be in [0, 1) (a fraction of the"
            + " TTL, typically 0.01), got "
            + driftFactor);
    requireNonNegative("driftBuffer", driftBuffer);
    check(
        nodeTimeout == null || positive(nodeTimeout),
        "nodeTimeout must be positive (or null for the TTL-based default), got " + nodeTimeout);
    check(
        retryAttempts >= 1,
        "retryAttempts must be at least 1 (the first attempt counts), got " + retryAttempts);
    requireNonNegative("retryDelayMin", retryDelayMin);
    requireNonNegative("retryDelayMax", retryDelayMax);
    check(
        retryDelayMax.compareTo(retryDelayMin) >= 0,
        "retryDelayMax ("
            + retryDelayMax.toMillis()
            + " ms) must not be shorter than retryDelayMin ("
            + retryDelayMin.toMillis()
            + " ms)");
    requireNonNegative("minValidity", minValidity);
    check(maxExtensions >= 0, "maxExtensions must be >= 0, got " + maxExtensions);
    check(
        restartQuarantine == null
            || (positive(restartQuarantine) && restartQuarantine.compareTo(MAX_QUARANTINE) <= 0),
        "restartQuarantine must be positive and at most "
            + MAX_QUARANTINE.toDays()
            + " days (the longest TTL the application uses), or null for off; got "
            + restartQuarantine);
  }

  /** The defaults described on each {@link Builder} method. */
  public static RedlockSettings defaults() {
    return new Copy().settings();
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

  /** True if restart quarantine is on. */
  public boolean restartQuarantineEnabled() {
    return restartQuarantine != null;
  }

  /** A copy with another drift factor. */
  public RedlockSettings withDriftFactor(double value) {
    return copy().driftFactor(value).settings();
  }

  /** A copy with another drift buffer. */
  public RedlockSettings withDriftBuffer(Duration value) {
    return copy().driftBuffer(value).settings();
  }

  /** A copy with another per-node timeout ({@code null} for the TTL-based default). */
  public RedlockSettings withNodeTimeout(Duration value) {
    Copy c = copy();
    c.nodeTimeout = value;
    return c.settings();
  }

  /** A copy with other retry settings. */
  public RedlockSettings withRetry(int attempts, Duration delayMin, Duration delayMax) {
    return copy().retry(attempts, delayMin, delayMax).settings();
  }

  /** A copy with another minimum validity. */
  public RedlockSettings withMinValidity(Duration value) {
    return copy().minValidity(value).settings();
  }

  /** A copy with another maximum number of extensions per lease. */
  public RedlockSettings withMaxExtensions(int value) {
    return copy().maxExtensions(value).settings();
  }

  /** A copy with fencing tokens on or off. */
  public RedlockSettings withFencing(boolean value) {
    return copy().fencing(value).settings();
  }

  /** A copy with restart quarantine for this maximum TTL, or off for {@code null}. */
  public RedlockSettings withRestartQuarantine(Duration maxTtl) {
    Copy c = copy();
    c.restartQuarantine = maxTtl;
    return c.settings();
  }

  /** A copy in which a node failing non-transiently fails the acquisition, or not. */
  public RedlockSettings withStrictNodes(boolean value) {
    return copy().strictNodes(value).settings();
  }

  /** A copy that allows nodes on one server (tests, demos), or refuses them at build. */
  public RedlockSettings withSharedServers(boolean value) {
    Copy c = copy();
    c.sharedServers = value;
    return c.settings();
  }

  private Copy copy() {
    return new Copy().settings(this);
  }

  private static final class Copy extends Builder<Copy> {}

  /**
   * The settings, one method each, stated once: {@link RedlockBuilder} inherits them, and the
   * Spring Boot starter's {@code redlock.*} properties bind to the fields. Each method checks the
   * settings at once, so a bad value fails where it is given.
   *
   * @param <B> the builder's own type, returned by every method for chaining
   */
  public abstract static class Builder<B extends Builder<B>> {
    // The defaults, stated here only; subclasses that bind properties may set the fields.
    protected double driftFactor = 0.01;
    protected Duration driftBuffer = Duration.ofMillis(2);
    protected Duration nodeTimeout;
    protected int retryAttempts = 3;
    protected Duration retryDelayMin = Duration.ofMillis(50);
    protected Duration retryDelayMax = Duration.ofMillis(250);
    protected Duration minValidity = Duration.ofMillis(1);
    protected int maxExtensions = 10_000;
    protected boolean fencing;
    protected Duration restartQuarantine;
    protected boolean strictNodes = true;
    protected boolean sharedServers;

    /** For subclasses. */
    protected Builder() {}

    /**
     * Fraction of the TTL subtracted from every validity for clock drift between the nodes and this
     * machine (default 0.01): the drift allowance is {@code TTL × driftFactor + driftBuffer}.
     */
    public B driftFactor(double driftFactor) {
      this.driftFactor = driftFactor;
      return checked();
    }

    /** Constant subtracted from every validity for drift and scheduling (default 2 ms). */
    public B driftBuffer(Duration driftBuffer) {
      this.driftBuffer = driftBuffer;
      return checked();
    }

    /**
     * How long one node may take to answer one call (default: TTL/50 within [20 ms, 1 s], 200 ms
     * for a 10 s TTL: small beside the TTL, as the algorithm advises, and enough for a database
     * under load; a node that is down is not waited for in any case, see {@link NodeHealth}).
     */
    public B nodeTimeout(Duration nodeTimeout) {
      this.nodeTimeout = Objects.requireNonNull(nodeTimeout, "nodeTimeout must not be null");
      return checked();
    }

    /**
     * Attempts made by {@code tryAcquire}, the first included (default 3), and the shortest and
     * longest random pause between them (default 50 ms and 250 ms).
     */
    public B retry(int attempts, Duration delayMin, Duration delayMax) {
      this.retryAttempts = attempts;
      this.retryDelayMin = delayMin;
      this.retryDelayMax = delayMax;
      return checked();
    }

    /** A fresh lease with less validity than this is given up at once (default 1 ms). */
    public B minValidity(Duration minValidity) {
      this.minValidity = minValidity;
      return checked();
    }

    /** How many times one lease may be extended (default 10,000). */
    public B maxExtensions(int maxExtensions) {
      this.maxExtensions = maxExtensions;
      return checked();
    }

    /**
     * Gives every lease a fencing token ({@link Lease#fencingToken()}) that strictly increases
     * across the acquisitions of a resource, for the protected resource to refuse a paused holder's
     * writes ({@link FencingGuard}); one more round trip per acquisition, and every node must keep
     * fencing counters, else {@code build()} fails naming them. Default off.
     */
    public B fencing(boolean enabled) {
      this.fencing = enabled;
      return checked();
    }

    /**
     * Switches on restart quarantine for applications whose longest lock TTL is {@code maxTtl}: a
     * node whose lock state is not durable (Redis without {@code appendfsync always}, say) forgets
     * its locks when it restarts, so its vote counts only once it has been up for {@code maxTtl}
     * plus the drift allowance; durable nodes count at once. Quarantined nodes show in {@link
     * Lease#quarantinedNodes()}, failure messages and the log. Cost: after a majority of such nodes
     * restart, no lock can be had for {@code maxTtl}; no lease may ask for a longer TTL; every node
     * must report its status, else {@code build()} fails. Default off; see docs/safety.md.
     *
     * @param maxTtl the longest TTL any client of these nodes uses for a lock, positive
     */
    public B restartQuarantine(Duration maxTtl) {
      this.restartQuarantine =
          Objects.requireNonNull(
              maxTtl, "maxTtl must not be null; call noRestartQuarantine() for off");
      return checked();
    }

    /** Switches restart quarantine off (the default), e.g. for tests that restart nodes at will. */
    public B noRestartQuarantine() {
      this.restartQuarantine = null;
      return checked();
    }

    /**
     * Whether a node that fails in a way no retry fixes (a wrong password, a missing table, an
     * unknown host, TLS refused) fails {@code build()} and acquisitions with {@link
     * NodesMisconfiguredException} even when the others make a majority: a quorum that silently
     * runs without one of its nodes has lost the fault tolerance its size promises. Default on;
     * off, such a node is outvoted, logged once at WARN and listed in {@link Lease#failedNodes()}.
     */
    public B strictNodes(boolean strict) {
      this.strictNodes = strict;
      return checked();
    }

    /**
     * Lets nodes be one server under several names or databases (tests and demos only); by default
     * {@code build()} refuses nodes that report the same incarnation, whose loss would take several
     * votes at once.
     */
    public B allowSharedServers() {
      this.sharedServers = true;
      return checked();
    }

    /** Replaces all settings at once. */
    public B settings(RedlockSettings s) {
      Objects.requireNonNull(s, "settings must not be null");
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
      return self();
    }

    /**
     * The settings given so far, the defaults for the others.
     *
     * @throws IllegalArgumentException naming the setting, if one is out of range
     */
    public RedlockSettings settings() {
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

    private B checked() {
      settings();
      return self();
    }

    @SuppressWarnings("unchecked")
    private B self() {
      return (B) this;
    }
  }

  private static void requireNonNegative(String name, Duration value) {
    Objects.requireNonNull(value, name + " must not be null");
    check(!value.isNegative(), name + " must not be negative, got " + value);
  }

  private static boolean positive(Duration d) {
    return !d.isNegative() && !d.isZero();
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException(message);
    }
  }
}
