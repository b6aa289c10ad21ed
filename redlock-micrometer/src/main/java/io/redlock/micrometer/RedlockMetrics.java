package io.redlock.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.redlock.LeaseLost;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Records what a {@link io.redlock.Redlock} does as Micrometer meters. Register it when building:
 *
 * <pre>{@code
 * Redlock redlock = Redlock.builder()
 *     .nodes(...)
 *     .listener(RedlockMetrics.of(meterRegistry))
 *     .build();
 * new RedlockNodeMetrics(redlock).bindTo(meterRegistry); // node health gauges, optional
 * }</pre>
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@value #NODE_CALLS}</td><td>timer</td><td>node, operation, outcome</td>
 *       <td>one call on one node, from the start of its fan-out to its answer; outcome is
 *       {@code yes}, {@code no}, {@code timed_out}, {@code failed} (a retry may help) or
 *       {@code misconfigured} (it will not)</td></tr>
 *   <tr><td>{@value #ACQUISITIONS}</td><td>timer</td><td>result = acquired | not_acquired</td>
 *       <td>a whole acquisition, attempts and pauses included</td></tr>
 *   <tr><td>{@value #ATTEMPTS}</td><td>distribution summary</td><td>result</td>
 *       <td>attempts one acquisition made</td></tr>
 *   <tr><td>{@value #EXTENSIONS}</td><td>counter</td><td>result = extended | failed</td>
 *       <td>extensions, by hand or by keep-alive</td></tr>
 *   <tr><td>{@value #RELEASES}</td><td>counter</td><td>complete = true | false</td>
 *       <td>releases; {@code false} when some node could not be asked</td></tr>
 *   <tr><td>{@value #LOST}</td><td>counter</td><td>reason</td>
 *       <td>leases lost ({@link LeaseLost.Reason}, lower case)</td></tr>
 *   <tr><td>{@value #HELD}</td><td>gauge</td><td></td>
 *       <td>leases acquired and not yet released (see below)</td></tr>
 * </table>
 *
 * <p>Node names are the Redlock's redacted node names (no passwords), a bounded set. Resource names
 * are not tags unless {@link Builder#resourceTags(boolean)} says so, since an application may lock
 * any number of distinct resources; with it, every meter but the node calls also carries {@code
 * resource}.
 *
 * <p>{@value #HELD} counts acquisitions minus releases, never below zero: the listener sees no
 * lease identity, so a lease that was lost, or ran out, and was never released still counts until
 * it is released (releasing a lost lease is what every well-behaved holder does), and a {@code
 * resume}d lease counts only its release.
 *
 * <p>Cheap on the lock path: each meter is looked up once and cached; recording is Micrometer's own
 * cost. Thread-safe.
 */
public final class RedlockMetrics implements RedlockListener {
  /** Timer of node calls. */
  public static final String NODE_CALLS = "redlock.node.calls";

  /** Timer of acquisitions. */
  public static final String ACQUISITIONS = "redlock.acquisitions";

  /** Summary of attempts per acquisition. */
  public static final String ATTEMPTS = "redlock.acquisition.attempts";

  /** Counter of extensions. */
  public static final String EXTENSIONS = "redlock.extensions";

  /** Counter of releases. */
  public static final String RELEASES = "redlock.releases";

  /** Counter of lost leases. */
  public static final String LOST = "redlock.leases.lost";

  /** Gauge of leases acquired and not yet released. */
  public static final String HELD = "redlock.leases.held";

  private static final Outcome[] OUTCOMES = Outcome.values();

  private final MeterRegistry registry;
  private final Tags tags;
  private final boolean resourceTags;

  /** node -> operation -> one timer per outcome, registered on first use. */
  private final ConcurrentMap<String, ConcurrentMap<String, AtomicReferenceArray<Timer>>>
      nodeCalls = new ConcurrentHashMap<>();

  /** The meters of every resource together; null with resource tags. */
  private final ResourceMeters all;

  /** The meters of each resource; null without resource tags. */
  private final ConcurrentMap<String, ResourceMeters> byResource;

  private RedlockMetrics(Builder b) {
    this.registry = b.registry;
    this.tags = b.tags;
    this.resourceTags = b.resourceTags;
    this.all = resourceTags ? null : new ResourceMeters(tags);
    this.byResource = resourceTags ? new ConcurrentHashMap<>() : null;
  }

  /** Metrics into {@code registry}, without extra tags and without resource tags. */
  public static RedlockMetrics of(MeterRegistry registry) {
    return builder(registry).build();
  }

  /** A builder for metrics into {@code registry}. */
  public static Builder builder(MeterRegistry registry) {
    return new Builder(registry);
  }

  /** Whether meters carry the resource as a tag. */
  public boolean resourceTags() {
    return resourceTags;
  }

  @Override
  public void nodeCall(String node, String operation, Outcome outcome, long nanos) {
    ConcurrentMap<String, AtomicReferenceArray<Timer>> ops = nodeCalls.get(node);
    if (ops == null) {
      ops = nodeCalls.computeIfAbsent(node, n -> new ConcurrentHashMap<>());
    }
    AtomicReferenceArray<Timer> timers = ops.get(operation);
    if (timers == null) {
      timers = ops.computeIfAbsent(operation, o -> new AtomicReferenceArray<>(OUTCOMES.length));
    }
    Timer timer = timers.get(outcome.ordinal());
    if (timer == null) {
      // A race registers twice; Micrometer returns the same timer both times.
      timer =
          Timer.builder(NODE_CALLS)
              .description("Calls on one node, from the start of the fan-out to the answer")
              .tags(tags)
              .tag("node", node)
              .tag("operation", operation)
              .tag("outcome", tagValue(outcome))
              .register(registry);
      timers.set(outcome.ordinal(), timer);
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void acquisition(String resource, boolean acquired, int attempts, long nanos) {
    ResourceMeters m = meters(resource);
    (acquired ? m.acquired : m.notAcquired).record(nanos, attempts);
    if (acquired) {
      m.held.incrementAndGet();
    }
  }

  @Override
  public void extension(String resource, boolean extended) {
    ResourceMeters m = meters(resource);
    (extended ? m.extended : m.extensionFailed).increment();
  }

  @Override
  public void released(String resource, ReleaseOutcome outcome) {
    ResourceMeters m = meters(resource);
    (outcome.complete() ? m.releasedComplete : m.releasedIncomplete).increment();
    m.held.decrementAndGet();
  }

  @Override
  public void lost(LeaseLost lost) {
    // Rare: looked up each time rather than cached.
    Counter.builder(LOST)
        .description("Leases lost: token gone, nodes unreachable, expired, or Redlock closed")
        .tags(tagsFor(lost.resource()))
        .tag("reason", lost.reason().name().toLowerCase(Locale.ROOT))
        .register(registry)
        .increment();
  }

  private ResourceMeters meters(String resource) {
    if (!resourceTags) {
      return all;
    }
    ResourceMeters m = byResource.get(resource);
    return m != null
        ? m
        : byResource.computeIfAbsent(resource, r -> new ResourceMeters(tagsFor(r)));
  }

  private Tags tagsFor(String resource) {
    return resourceTags ? tags.and("resource", resource) : tags;
  }

  private static String tagValue(Outcome outcome) {
    return outcome.name().toLowerCase(Locale.ROOT);
  }

  /** The time and the attempts of acquisitions with one result. */
  private record Acquisitions(Timer time, DistributionSummary attempts) {
    void record(long nanos, int count) {
      time.record(nanos, TimeUnit.NANOSECONDS);
      attempts.record(count);
    }
  }

  /** The meters of one resource, or of all together; registered eagerly so they show as zero. */
  private final class ResourceMeters {
    final Acquisitions acquired;
    final Acquisitions notAcquired;
    final Counter extended;
    final Counter extensionFailed;
    final Counter releasedComplete;
    final Counter releasedIncomplete;
    final AtomicLong held = new AtomicLong();

    ResourceMeters(Tags t) {
      acquired = acquisitions(t.and("result", "acquired"));
      notAcquired = acquisitions(t.and("result", "not_acquired"));
      String extensions = "Lease extensions, by hand or by keep-alive";
      extended = counter(EXTENSIONS, extensions, t.and("result", "extended"));
      extensionFailed = counter(EXTENSIONS, extensions, t.and("result", "failed"));
      String releases = "Releases; complete=false when some node could not be asked";
      releasedComplete = counter(RELEASES, releases, t.and("complete", "true"));
      releasedIncomplete = counter(RELEASES, releases, t.and("complete", "false"));
      Gauge.builder(HELD, held, h -> Math.max(0, h.get()))
          .description("Leases acquired and not yet released")
          .tags(t)
          .strongReference(true)
          .register(registry);
    }

    private Acquisitions acquisitions(Tags t) {
      return new Acquisitions(
          Timer.builder(ACQUISITIONS)
              .description("Acquisitions, attempts and pauses included")
              .tags(t)
              .register(registry),
          DistributionSummary.builder(ATTEMPTS)
              .description("Attempts made by one acquisition")
              .tags(t)
              .register(registry));
    }

    private Counter counter(String name, String description, Tags t) {
      return Counter.builder(name).description(description).tags(t).register(registry);
    }
  }

  /** Options of {@link RedlockMetrics}. Not thread-safe. */
  public static final class Builder {
    private final MeterRegistry registry;
    private Tags tags = Tags.empty();
    private boolean resourceTags;

    private Builder(MeterRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry must not be null");
    }

    /**
     * Tags added to every meter, e.g. {@code Tags.of("redlock", "billing")} when an application has
     * several Redlocks.
     */
    public Builder tags(Iterable<Tag> tags) {
      this.tags = this.tags.and(Objects.requireNonNull(tags, "tags must not be null"));
      return this;
    }

    /** Tags added to every meter, as key-value pairs. */
    public Builder tags(String... keyValues) {
      this.tags = this.tags.and(keyValues);
      return this;
    }

    /**
     * Whether acquisitions, extensions, releases, losses and leases held carry a {@code resource}
     * tag. Default off: turn it on only when the application locks a small, known set of resources
     * (every distinct resource makes its own time series).
     */
    public Builder resourceTags(boolean on) {
      this.resourceTags = on;
      return this;
    }

    /** The metrics; their non-node meters are registered now. */
    public RedlockMetrics build() {
      return new RedlockMetrics(this);
    }
  }
}
