package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;

/**
 * The keep-alive of one lease: a task on the Redlock's {@link Scheduler} that runs {@link
 * QuorumLease#renew} and schedules itself again. It holds the lease weakly: once the application
 * drops every reference to a lease, nobody can release it, so it is not renewed any more and runs
 * out on its own.
 */
final class Renewal implements Runnable {
  private final WeakReference<QuorumLease> lease;
  private final KeepAlive options;
  private final Scheduler scheduler;
  private final Leasing redlock;
  private final long startedAt;

  /** Why to stop renewing now (the thread holding a Lock ended...), or null to go on; or null. */
  private final java.util.function.Supplier<String> stopWhen;

  private volatile boolean stopped;
  private volatile ScheduledFuture<?> next;

  Renewal(
      QuorumLease lease,
      Leasing redlock,
      KeepAlive options,
      java.util.function.Supplier<String> stopWhen) {
    this.lease = new WeakReference<>(lease);
    this.options = options;
    this.redlock = redlock;
    this.scheduler = redlock.scheduler;
    this.startedAt = redlock.ticker.read();
    this.stopWhen = stopWhen;
  }

  @Override
  public void run() {
    QuorumLease l = lease.get();
    if (l == null || stopped) {
      return; // dropped by the application, or released: it runs out on its own
    }
    long again = l.renew(this);
    l = null; // not kept reachable while waiting for the next run
    if (again >= 0 && !stopped) {
      scheduleIn(again);
    }
  }

  void scheduleIn(long nanos) {
    next = scheduler.schedule(this, nanos);
  }

  /** Stops the renewal; a run under way finishes, and none follows. */
  void stop() {
    stopped = true;
    ScheduledFuture<?> n = next;
    if (n != null) {
      n.cancel(false);
    }
  }

  /**
   * Refuses options that would let a lease of this TTL run out between two extensions.
   *
   * @throws IllegalArgumentException naming the option and a value that works
   */
  void check(Duration ttl) {
    if (options.every() != null && options.every().compareTo(ttl) >= 0) {
      throw new IllegalArgumentException(
          "keep-alive every ("
              + options.every().toMillis()
              + " ms) must be shorter than the lease's TTL ("
              + ttl.toMillis()
              + " ms), or the lease runs out between two extensions; leave it unset for a"
              + " third of the TTL");
    }
    if (options.lostMargin() != null && options.lostMargin().compareTo(ttl) >= 0) {
      throw new IllegalArgumentException(
          "keep-alive lostMargin ("
              + options.lostMargin().toMillis()
              + " ms) must be shorter than the lease's TTL ("
              + ttl.toMillis()
              + " ms); leave it unset for a tenth of the TTL");
    }
  }

  /**
   * When to extend next, given the validity left: after {@link #everyNanos}, but never later than
   * halfway to the loss margin, so that a failing extension is retried and a loss told in time.
   */
  long nextNanos(Duration ttl, long leftNanos) {
    long toMargin = leftNanos - marginNanos(ttl);
    return Math.max(1_000_000, Math.min(everyNanos(ttl), toMargin / 2));
  }

  long everyNanos(Duration ttl) {
    return options.every() != null
        ? Timing.saturatedNanos(options.every())
        : Timing.saturatedNanos(ttl) / 3;
  }

  /** The validity that must be left when the lease is declared lost. */
  long marginNanos(Duration ttl) {
    if (options.lostMargin() != null) {
      return Timing.saturatedNanos(options.lostMargin());
    }
    return Math.max(Timing.saturatedNanos(ttl) / 10, 2 * redlock.timing.nodeTimeoutNanos(ttl));
  }

  /** Why the renewal must stop before extending again, or null to go on. */
  String stopReason(QuorumLease l) {
    String owner = stopWhen == null ? null : stopWhen.get();
    if (owner != null) {
      return owner;
    }
    if (options.maxHold() != null
        && redlock.ticker.read() - startedAt >= Timing.saturatedNanos(options.maxHold())) {
      return "it reached its maximum hold time of " + options.maxHold().toMillis() + " ms";
    }
    int max = redlock.timing.settings.maxExtensions();
    if (!options.ignoreMaxExtensions() && l.extensions() >= max) {
      return "it was extended " + max + " times, the maximum (maxExtensions)";
    }
    return null;
  }
}
