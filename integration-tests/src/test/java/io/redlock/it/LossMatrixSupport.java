package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * What the loss-matrix tests of the entry points share (LossMatrixWithLeaseTest,
 * LossMatrixAcquireAllTest, LossMatrixResumeTest): the endings of a lease, a watcher of the
 * holder's "held" answers with timestamps (as {@link LossMatrixRedisTest}'s), and the checks every
 * row of the matrix makes.
 */
final class LossMatrixSupport {
  /** Short, so that a class stays well under 30 s; renewals every TTL/3. */
  static final Duration TTL = Duration.ofMillis(1_000);

  /** Generous bounds for a busy 2-core machine. */
  static final Duration TOLD_WITHIN = TTL.plusSeconds(2);

  static final Duration SECOND_HOLDER_WITHIN = Duration.ofSeconds(10);

  private LossMatrixSupport() {}

  /** How a lease ends. */
  enum Ending {
    /** Not kept alive: its TTL ran out. */
    TTL_RAN_OUT,
    /** Kept alive; its key deleted on 2 of 3 nodes, as {@code redlock unlock --force} does. */
    DELETED,
    /** Kept alive; 2 of 3 nodes frozen (SIGSTOP). */
    MAJORITY_UNREACHABLE,
    /** Kept alive; released through another handle of its token (from {@code resume}). */
    RELEASED_ELSEWHERE,
    /**
     * Not kept alive; the holder sleeps past its validity (a GC or SIGSTOP pause of the holder)
     * while a second client takes the lock, then looks.
     */
    PAUSED;

    boolean keptAlive() {
      return this == DELETED || this == MAJORITY_UNREACHABLE || this == RELEASED_ELSEWHERE;
    }

    LeaseLost.Reason expectedReason() {
      return switch (this) {
        case TTL_RAN_OUT, PAUSED -> LeaseLost.Reason.EXPIRED;
        // The holder cannot tell another handle's release from a deletion: its token is gone.
        case DELETED, RELEASED_ELSEWHERE -> LeaseLost.Reason.TOKEN_GONE;
        case MAJORITY_UNREACHABLE -> LeaseLost.Reason.UNREACHABLE;
      };
    }
  }

  /** Counts the extensions (renewals included) per resource, to see that renewal stopped. */
  static final class Extensions implements RedlockListener {
    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

    @Override
    public void extension(String resource, boolean extended) {
      counts.computeIfAbsent(resource, r -> new AtomicInteger()).incrementAndGet();
    }

    int of(String resource) {
      AtomicInteger c = counts.get(resource);
      return c == null ? 0 : c.get();
    }
  }

  static Redlock redlock(RedisServers redis) {
    return redlock(redis, null);
  }

  static Redlock redlock(RedisServers redis, RedlockListener listener) {
    var builder =
        Redlock.builder()
            .nodeUris(redis.uris())
            .nodeTimeout(Duration.ofMillis(200)) // generous for a busy 2-core machine
            .retry(3, Duration.ofMillis(10), Duration.ofMillis(50));
    if (listener != null) {
      builder.listener(listener);
    }
    return builder.build();
  }

  /**
   * Polls a "held" view on its own thread and remembers when the last call that answered true
   * began: the first holder's "held" ends there.
   */
  static final class Watcher implements AutoCloseable {
    final AtomicLong lastHeldCallStart = new AtomicLong(Long.MIN_VALUE);
    final AtomicBoolean saidHeldAfterLoss = new AtomicBoolean();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    Watcher(BooleanSupplier held, CompletableFuture<?> lost) {
      thread =
          new Thread(
              () -> {
                for (int i = 0; i < 100_000 && !stop.get(); i++) {
                  long began = System.nanoTime();
                  boolean lostBefore = lost.isDone();
                  if (held.getAsBoolean()) {
                    lastHeldCallStart.set(began);
                    if (lostBefore) {
                      saidHeldAfterLoss.set(true);
                    }
                  }
                  try {
                    Thread.sleep(1);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "loss-matrix-watcher");
      thread.setDaemon(true);
      thread.start();
    }

    /** The first stopped saying "held" before {@code grantedAt}, and never did after the loss. */
    void assertStoppedBefore(long grantedAt) {
      assertThat(lastHeldCallStart.get())
          .as("the first stopped saying held before the second was granted")
          .isLessThan(grantedAt);
      assertThat(saidHeldAfterLoss).as("held after onLost").isFalse();
    }

    @Override
    public void close() throws InterruptedException {
      stop.set(true);
      thread.join(10_000);
    }
  }

  /**
   * Ends {@code lease} (of {@code resource}) by {@code ending}, then checks the three promises of
   * the matrix: the loss is told with the expected reason within {@link #TOLD_WITHIN}; no view says
   * "held" after it, and a second client ({@code second}) is granted {@code resource} only after
   * the last "held"; the renewal stopped. Returns the second client's lease, still held.
   */
  static Lease endAndCheck(
      RedisServers redis,
      Ending ending,
      Lease lease,
      String resource,
      Runnable releaseElsewhere,
      Redlock second,
      Extensions extensions)
      throws Exception {
    if (ending.keptAlive()) {
      lease.keepAlive();
    }
    AtomicLong toldAt = new AtomicLong();
    CompletableFuture<LeaseLost> lost = new CompletableFuture<>();
    lease.onLost(
        l -> {
          toldAt.set(System.nanoTime());
          lost.complete(l);
        });
    try (Watcher watcher = new Watcher(lease::isValid, lost)) {
      long endedAt = System.nanoTime();
      LeaseLost why;
      try {
        end(redis, ending, resource, releaseElsewhere);
        why = lost.get(10, TimeUnit.SECONDS);
      } finally {
        resumeAll(redis);
      }
      assertThat(why.reason()).isEqualTo(ending.expectedReason());
      assertThat(TimeUnit.NANOSECONDS.toMillis(toldAt.get() - endedAt))
          .as("loss told within TTL + 2 s of the end")
          .isLessThan(TOLD_WITHIN.toMillis());
      assertNotHeld(lease);
      int renewals = extensions.of(resource);

      Lease next = acquireWithin(second, resource, SECOND_HOLDER_WITHIN);
      long grantedAt = System.nanoTime();
      next.keepAlive(); // held for the checks that follow, however slow the machine
      watcher.assertStoppedBefore(grantedAt);
      Thread.sleep(TTL.toMillis() / 2); // longer than a renewal period (TTL/3)
      assertThat(extensions.of(resource)).as("renewals after the loss").isEqualTo(renewals);
      assertThat(next.isValid()).as("the second holder, after the first's loss").isTrue();
      return next;
    }
  }

  /** Ends {@code lease} of {@code resource} by {@code ending}; the pause runs on this thread. */
  static void end(RedisServers redis, Ending ending, String resource, Runnable releaseElsewhere)
      throws InterruptedException {
    switch (ending) {
      case TTL_RAN_OUT -> {} // nothing to do: it runs out
      case DELETED -> {
        redis.get(0).command("DEL", resource);
        redis.get(1).command("DEL", resource);
      }
      case MAJORITY_UNREACHABLE -> {
        redis.get(0).pause();
        redis.get(1).pause();
      }
      case RELEASED_ELSEWHERE -> releaseElsewhere.run();
      case PAUSED -> Thread.sleep(TTL.multipliedBy(2).toMillis());
    }
  }

  static void resumeAll(RedisServers redis) {
    for (RedisServer server : redis) {
      server.resume();
    }
  }

  /** The lease says "not held" in every view, and cannot be extended back to life. */
  static void assertNotHeld(Lease lease) {
    assertThat(lease.isValid()).as("isValid after the end").isFalse();
    assertThat(lease.remainingValidity()).isEqualTo(Duration.ZERO);
    assertThatThrownBy(lease::checkValid).isInstanceOf(LeaseLostException.class);
    assertThat(extendQuietly(lease)).as("extend after the end").isFalse();
    assertThat(lease.isValid()).as("isValid after an extend").isFalse();
  }

  static boolean extendQuietly(Lease lease) {
    try {
      return lease.extend(TTL);
    } catch (LeaseLostException | IllegalStateException e) {
      return false;
    }
  }

  static Lease acquireWithin(Redlock redlock, String resource, Duration bound)
      throws InterruptedException {
    long deadline = System.nanoTime() + bound.toNanos();
    while (System.nanoTime() < deadline) {
      Optional<Lease> got = redlock.tryAcquire(resource, TTL);
      if (got.isPresent()) {
        return got.get();
      }
      Thread.sleep(20);
    }
    throw new AssertionError("a second client could not take '" + resource + "' within " + bound);
  }

  /** How many nodes hold {@code resource} with {@code token}. */
  static int nodesHolding(RedisServers redis, String resource, String token) {
    int n = 0;
    for (RedisServer server : redis) {
      if (token.equals(server.command("GET", resource))) {
        n++;
      }
    }
    return n;
  }

  static long millisSince(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
  }
}
