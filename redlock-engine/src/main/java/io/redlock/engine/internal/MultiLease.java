package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.NodeFailure;
import io.redlock.ReleaseOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * One lease over several resources ({@code acquireAll}): a lease per resource, in the order they
 * were acquired, acting together. It is valid while every part is; it is lost when any part is.
 * {@link #resource()} and {@link #token()} list the parts', comma-separated.
 */
final class MultiLease implements Lease {
  private final List<Lease> parts;
  private final Scheduler scheduler;

  /** Set when any part is lost: the lease is lost as a whole, so no part is renewed any more. */
  private final AtomicBoolean partLost = new AtomicBoolean();

  MultiLease(List<Lease> parts, Scheduler scheduler) {
    this.parts = List.copyOf(parts);
    this.scheduler = scheduler;
    AtomicBoolean flag = partLost; // not `this`: renewals hold it
    this.parts.forEach(p -> p.whenLost().thenRun(() -> flag.set(true)));
  }

  @Override
  public String resource() {
    return parts.stream().map(Lease::resource).collect(Collectors.joining(","));
  }

  @Override
  public String token() {
    return parts.stream().map(Lease::token).collect(Collectors.joining(","));
  }

  @Override
  public long fencingToken() {
    throw new IllegalStateException(
        "a lease over several resources has a fencing token per resource, and none of them is"
            + " right for the others: lock each resource whose writes are fenced on its own");
  }

  @Override
  public List<String> grantedNodes() {
    return parts.get(0).grantedNodes();
  }

  @Override
  public List<NodeFailure> failedNodes() {
    List<NodeFailure> out = new ArrayList<>();
    parts.forEach(p -> out.addAll(p.failedNodes()));
    return List.copyOf(out);
  }

  @Override
  public Duration remainingValidity() {
    Duration least = null;
    for (Lease p : parts) {
      Duration d = p.remainingValidity();
      if (least == null || d.compareTo(least) < 0) {
        least = d;
      }
    }
    return least;
  }

  @Override
  public boolean isValid() {
    return parts.stream().allMatch(Lease::isValid);
  }

  @Override
  public boolean extend(Duration ttl) {
    boolean all = true;
    for (Lease p : parts) {
      all &= p.extend(ttl);
    }
    return all;
  }

  @Override
  public int extensions() {
    return parts.stream().mapToInt(Lease::extensions).min().orElse(0);
  }

  @Override
  public Lease keepAlive(KeepAlive options) {
    AtomicBoolean flag = partLost;
    parts.forEach(
        p ->
            ((QuorumLease) p)
                .keepAlive(
                    options,
                    () -> flag.get() ? "another resource of its acquireAll lease was lost" : null));
    return this;
  }

  @Override
  public void onLost(Consumer<LeaseLost> listener) {
    whenLost().thenAcceptAsync(listener, scheduler.notifier());
  }

  @Override
  public CompletionStage<LeaseLost> whenLost() {
    CompletableFuture<LeaseLost> any = new CompletableFuture<>();
    parts.forEach(p -> p.whenLost().thenAccept(any::complete));
    return any.minimalCompletionStage();
  }

  @Override
  public void checkValid() {
    parts.forEach(Lease::checkValid);
  }

  @Override
  public ReleaseOutcome release() {
    return release(false, 0);
  }

  @Override
  public ReleaseOutcome releaseAwaitingLate(Duration maxWait) {
    return release(true, System.nanoTime() + Timing.checkLateWait(maxWait));
  }

  /** Releases every part, if {@code late} waiting for late replies until {@code deadline}. */
  private ReleaseOutcome release(boolean late, long deadline) {
    int deleted = 0;
    int answered = 0;
    int nodes = 0;
    List<String> failed = new ArrayList<>();
    for (Lease p : parts) {
      ReleaseOutcome o =
          !late
              ? p.release()
              : p.releaseAwaitingLate(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      deleted += o.deleted();
      answered += o.answered();
      nodes += o.nodes();
      failed.addAll(o.failedNodes());
    }
    return new ReleaseOutcome(deleted, answered, nodes, failed.stream().distinct().toList());
  }

  @Override
  public CompletableFuture<ReleaseOutcome> releaseAsync() {
    return CompletableFuture.supplyAsync(this::release, scheduler.executor());
  }

  @Override
  public CompletableFuture<Boolean> extendAsync(Duration ttl) {
    return CompletableFuture.supplyAsync(() -> extend(ttl), scheduler.executor());
  }

  @Override
  public void close() {
    release();
  }

  @Override
  public String toString() {
    return "Lease" + parts;
  }
}
