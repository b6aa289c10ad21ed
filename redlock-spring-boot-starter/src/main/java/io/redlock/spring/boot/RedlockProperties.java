package io.redlock.spring.boot;

import io.redlock.RedlockSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code redlock.*} properties. Only {@code redlock.nodes} is required. The Redlock's settings
 * ({@code redlock.fencing}, {@code redlock.retry.attempts}, ...) bind to the {@link
 * RedlockSettings.Builder} this extends, which states them and their defaults once.
 *
 * <pre>
 * redlock.nodes=redis://a:6379,redis://b:6379,redis://c:6379
 * redlock.fencing=true
 * </pre>
 */
@ConfigurationProperties(prefix = "redlock")
public class RedlockProperties extends RedlockSettings.Builder<RedlockProperties> {
  /** Whether to create a Redlock from these properties. */
  private boolean enabled = true;

  /**
   * The quorum's node URIs, any mix of backends: redis://, rediss://, jdbc:postgresql://,
   * jdbc:mariadb://, mongodb://, ... (each backend's module must be on the class path). Use 3 or 5.
   */
  private List<String> nodes = new ArrayList<>();

  /** TTL of the leases of the auto-configured Spring Integration LockRegistry. */
  private Duration ttl = Duration.ofSeconds(30);

  private final Retry retry = new Retry();
  private final Metrics metrics = new Metrics();
  private final Health health = new Health();
  private final Locks shedlock = new Locks();
  private final Locks integration = new Locks();

  public RedlockProperties() {
    shedlock.setKeyPrefix("shedlock:");
  }

  /**
   * Retries of an acquisition: {@code redlock.retry.attempts}, {@code delay-min}, {@code
   * delay-max}.
   */
  public class Retry {
    public void setAttempts(int attempts) {
      retryAttempts = attempts;
    }

    public void setDelayMin(Duration delayMin) {
      retryDelayMin = delayMin;
    }

    public void setDelayMax(Duration delayMax) {
      retryDelayMax = delayMax;
    }
  }

  /** A part of the starter that is on when its library is on the class path. */
  public static class Part {
    /** Whether to provide it (the application's own bean of that kind wins anyway). */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** Micrometer metrics, when Micrometer and redlock-micrometer are on the class path. */
  public static class Metrics extends Part {
    /**
     * Whether meters carry the locked resource as a tag. Only for a small, known set of resources:
     * every distinct resource makes its own time series.
     */
    private boolean resourceTags = false;

    public boolean isResourceTags() {
      return resourceTags;
    }

    public void setResourceTags(boolean resourceTags) {
      this.resourceTags = resourceTags;
    }
  }

  /** The Actuator health indicator (switched off by management.health.redlock.enabled=false). */
  public static class Health {
    /**
     * Whether the health check, when the nodes' last known states are not fresh (a node not up, or
     * silent for probe-after), first makes one lock attempt on a probe resource to refresh them.
     */
    private boolean probe = true;

    /** How long since a node's last answer before the health check probes. */
    private Duration probeAfter = Duration.ofSeconds(10);

    /** The resource the probe locks for an instant. */
    private String probeResource = "redlock:health-probe";

    /**
     * Whether the health check also probes every node for its status and clock (durability,
     * incarnation, uptime, clock offset, restart-quarantine state), as redlock doctor does; at most
     * once per probe-after, all nodes at once.
     */
    private boolean nodeChecks = true;

    /** How long the health check's probe of the nodes may take, all nodes at once. */
    private Duration nodeCheckTimeout = Duration.ofSeconds(1);

    public boolean isProbe() {
      return probe;
    }

    public void setProbe(boolean probe) {
      this.probe = probe;
    }

    public Duration getProbeAfter() {
      return probeAfter;
    }

    public void setProbeAfter(Duration probeAfter) {
      this.probeAfter = probeAfter;
    }

    public String getProbeResource() {
      return probeResource;
    }

    public void setProbeResource(String probeResource) {
      this.probeResource = probeResource;
    }

    public boolean isNodeChecks() {
      return nodeChecks;
    }

    public void setNodeChecks(boolean nodeChecks) {
      this.nodeChecks = nodeChecks;
    }

    public Duration getNodeCheckTimeout() {
      return nodeCheckTimeout;
    }

    public void setNodeCheckTimeout(Duration nodeCheckTimeout) {
      this.nodeCheckTimeout = nodeCheckTimeout;
    }
  }

  /**
   * The ShedLock LockProvider (redlock-shedlock) or the Spring Integration LockRegistry, when its
   * library is on the class path.
   */
  public static class Locks extends Part {
    /**
     * Put before every lock name or key to make the Redlock resource ("shedlock:" for ShedLock).
     */
    private String keyPrefix = "";

    public String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public List<String> getNodes() {
    return nodes;
  }

  public void setNodes(List<String> nodes) {
    this.nodes = nodes;
  }

  public Duration getTtl() {
    return ttl;
  }

  public void setTtl(Duration ttl) {
    this.ttl = ttl;
  }

  // The settings of RedlockSettings.Builder, bound here; described in the configuration metadata.

  public void setFencing(boolean fencing) {
    fencing(fencing);
  }

  public void setDriftFactor(double driftFactor) {
    driftFactor(driftFactor);
  }

  public void setDriftBuffer(Duration driftBuffer) {
    driftBuffer(driftBuffer);
  }

  public void setNodeTimeout(Duration nodeTimeout) {
    nodeTimeout(nodeTimeout);
  }

  public void setMinValidity(Duration minValidity) {
    minValidity(minValidity);
  }

  public void setMaxExtensions(int maxExtensions) {
    maxExtensions(maxExtensions);
  }

  public void setRestartQuarantine(Duration restartQuarantine) {
    restartQuarantine(restartQuarantine);
  }

  public void setStrictNodes(boolean strictNodes) {
    strictNodes(strictNodes);
  }

  public void setAllowSharedServers(boolean allowSharedServers) {
    sharedServers = allowSharedServers;
  }

  public Retry getRetry() {
    return retry;
  }

  public Metrics getMetrics() {
    return metrics;
  }

  public Health getHealth() {
    return health;
  }

  public Locks getShedlock() {
    return shedlock;
  }

  public Locks getIntegration() {
    return integration;
  }
}
