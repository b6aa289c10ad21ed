package io.redlock.engine.internal;

import io.redlock.Lease;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

/**
 * An acquisition that holds no thread while it waits: each attempt runs on the {@link Scheduler}'s
 * workers, and the pause before the next one is scheduled. Bounded by a number of attempts ({@code
 * tryAcquireAsync}) or by a waiting time ({@code acquireAsync}). Cancelling the future stops it; a
 * lease granted after the future was cancelled is released.
 */
final class AsyncAcquisition implements Runnable {
  private final QuorumRedlock redlock;
  private final String resource;
  private final Duration ttl;
  private final long ttlNanos;

  /** The most attempts, or 0 for no limit but the waiting time. */
  private final int maxAttempts;

  /** How long to wait in all, or -1 for no limit but the attempts. */
  private final long maxWaitNanos;

  private final CompletableFuture<Lease> future = new CompletableFuture<>();
  private final Tally tally = new Tally();
  private final long start;
  private int attempt;
  private volatile ScheduledFuture<?> next;

  AsyncAcquisition(
      QuorumRedlock redlock, String resource, Duration ttl, int maxAttempts, long maxWaitNanos) {
    this.redlock = redlock;
    this.resource = resource;
    this.ttl = ttl;
    this.ttlNanos = redlock.timing.checkTtl(ttl);
    this.maxAttempts = maxAttempts;
    this.maxWaitNanos = maxWaitNanos;
    this.start = redlock.ticker.read();
    future.whenComplete(
        (lease, failure) -> {
          ScheduledFuture<?> n = next;
          if (n != null) {
            n.cancel(false); // cancelled: no further attempt
          }
          if (redlock.listening.on) {
            redlock.listening.acquisition(
                resource, failure == null, tally.attempts, redlock.ticker.read() - start);
          }
        });
  }

  CompletableFuture<Lease> start() {
    try {
      redlock.scheduler.executor().execute(this);
    } catch (RuntimeException e) {
      future.completeExceptionally(e);
    }
    return future;
  }

  @Override
  public void run() {
    if (future.isDone()) {
      return;
    }
    attempt++;
    QuorumLease lease;
    try {
      lease = redlock.attemptOnce(resource, ttl, ttlNanos, tally);
    } catch (RuntimeException e) {
      future.completeExceptionally(e); // misconfigured nodes, a closed Redlock
      return;
    }
    if (lease != null) {
      if (!future.complete(lease)) {
        lease.release(); // cancelled meanwhile: nobody will release it
      }
      return;
    }
    long waited = redlock.ticker.read() - start;
    long left = maxWaitNanos < 0 ? Long.MAX_VALUE : maxWaitNanos - waited;
    if ((maxAttempts > 0 && attempt >= maxAttempts) || left <= 0) {
      future.completeExceptionally(redlock.timeout(resource, ttl, waited, attempt, tally));
      return;
    }
    next = redlock.scheduler.schedule(this, Math.min(redlock.timing.pickPauseNanos(), left));
    if (next == null) {
      future.completeExceptionally(
          new IllegalStateException("this Redlock was closed while '" + resource + "' waited"));
    }
  }
}
