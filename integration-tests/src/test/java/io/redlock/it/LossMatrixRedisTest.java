package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The loss matrix of docs/safety.md on three real Redis servers: for each way a lease ends, the
 * lease's own views ({@code isValid}, {@code checkValid}, {@code remainingValidity}, {@code
 * extend}) and the {@code Lock} adapter never say "held" after the end, the loss is surfaced within
 * a bound, and a second client is granted the lock only after the first stopped saying "held"
 * (checked on timestamps, as chaos checker C1 does).
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix on real servers")
class LossMatrixRedisTest {
  private static final Duration TTL = Duration.ofMillis(1_500);

  private static RedisServers redis;

  @BeforeAll
  static void start() {
    redis = RedisServers.start(3, RedisServer.builder().faultInjection());
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  private static Redlock redlock() {
    return Redlock.builder()
        .nodeUris(redis.uris())
        .nodeTimeout(Duration.ofMillis(200)) // generous for a busy 2-core machine
        .retry(3, Duration.ofMillis(10), Duration.ofMillis(50))
        .build();
  }

  /** How a lease ends. */
  enum Ending {
    /** Not kept alive: its TTL ran out. */
    TTL_RAN_OUT,
    /** Its key deleted on a majority, as {@code redlock unlock --force} does. */
    DELETED,
    /** A majority of the nodes frozen. */
    MAJORITY_UNREACHABLE,
    /** Released through another handle from {@code resume}. */
    RELEASED_ELSEWHERE
  }

  /**
   * Polls {@code lease.isValid()} on its own thread and remembers when the last call that answered
   * true began: the first holder's "held" ends there.
   */
  private static final class Watcher implements AutoCloseable {
    final AtomicLong lastHeldCallStart = new AtomicLong(Long.MIN_VALUE);
    final AtomicBoolean saidHeldAfterLoss = new AtomicBoolean();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final Thread thread;

    Watcher(Lease lease, CompletableFuture<LeaseLost> lost) {
      thread =
          new Thread(
              () -> {
                for (int i = 0; i < 100_000 && !stop.get(); i++) {
                  long began = System.nanoTime();
                  boolean lostBefore = lost.isDone();
                  if (lease.isValid()) {
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
              });
      thread.start();
    }

    @Override
    public void close() throws InterruptedException {
      stop.set(true);
      thread.join(10_000);
    }
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Ending.class)
  @DisplayName("a lease never says held after its end, tells the loss in time, and frees the lock")
  void lease(Ending ending) throws Exception {
    String resource = "matrix-" + ending;
    try (Redlock first = redlock();
        Redlock second = redlock()) {
      Lease lease = first.tryAcquire(resource, TTL).orElseThrow();
      if (ending != Ending.TTL_RAN_OUT) {
        lease.keepAlive();
      }
      CompletableFuture<LeaseLost> lost = new CompletableFuture<>();
      lease.onLost(lost::complete);
      try (Watcher watcher = new Watcher(lease, lost)) {
        long endedAt = System.nanoTime();
        end(ending, resource, lease, second);
        LeaseLost why;
        try {
          why = lost.get(10, TimeUnit.SECONDS);
        } finally {
          resumeAll();
        }
        long toldAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - endedAt);
        assertThat(why.reason()).isEqualTo(expectedReason(ending));
        assertThat(toldAfterMs)
            .as("loss told within TTL + 2 node timeouts of the end")
            .isLessThan(TTL.toMillis() + 2_000);

        assertThat(lease.isValid()).isFalse();
        assertThat(lease.remainingValidity()).isEqualTo(Duration.ZERO);
        assertThatThrownBy(lease::checkValid).isInstanceOf(LeaseLostException.class);
        assertThat(extendQuietly(lease)).as("extend after the end").isFalse();

        Lease next = acquireWithin(second, resource, Duration.ofSeconds(10));
        long grantedAt = System.nanoTime();
        assertThat(watcher.lastHeldCallStart.get())
            .as("the first stopped saying held before the second was granted")
            .isLessThan(grantedAt);
        assertThat(watcher.saidHeldAfterLoss).as("held after onLost").isFalse();
        next.release();
      }
      lease.release(); // cleans up; must not resurrect anything
      assertThat(lease.isValid()).isFalse();
    }
  }

  private static LeaseLost.Reason expectedReason(Ending ending) {
    return switch (ending) {
      case TTL_RAN_OUT -> LeaseLost.Reason.EXPIRED;
      case DELETED -> LeaseLost.Reason.TOKEN_GONE;
      case MAJORITY_UNREACHABLE -> LeaseLost.Reason.UNREACHABLE;
      // The holder cannot tell another handle's release from a deletion: its token is gone.
      case RELEASED_ELSEWHERE -> LeaseLost.Reason.TOKEN_GONE;
    };
  }

  private static void end(Ending ending, String resource, Lease lease, Redlock other) {
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
      case RELEASED_ELSEWHERE -> other.resume(resource, lease.token(), TTL).release();
    }
  }

  private static void resumeAll() {
    for (RedisServer server : redis) {
      server.resume();
    }
  }

  private static boolean extendQuietly(Lease lease) {
    try {
      return lease.extend(TTL);
    } catch (LeaseLostException | IllegalStateException e) {
      return false;
    }
  }

  private static Lease acquireWithin(Redlock redlock, String resource, Duration bound)
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

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = Ending.class,
      names = {"DELETED", "MAJORITY_UNREACHABLE"})
  @DisplayName("asLock never says locked after a loss, to its holder or to another thread")
  void asLock(Ending ending) throws Exception {
    String resource = "matrix-lock-" + ending;
    try (Redlock redlock = redlock();
        Redlock second = redlock()) {
      Lock lock = redlock.asLock(resource, TTL);
      lock.lock();
      end(ending, resource, null, second);
      try {
        // The keep-alive notices within its period plus the margin; reentry then throws.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        boolean reentered = true;
        while (reentered && System.nanoTime() < deadline) {
          try {
            reentered = lock.tryLock();
            lock.unlock();
            Thread.sleep(20);
          } catch (LeaseLostException | IllegalMonitorStateException e) {
            reentered = false; // the reentry, or the inner unlock, found the lease lost
          }
        }
        assertThat(reentered).as("reentry refused once the lease is lost").isFalse();
      } finally {
        resumeAll();
      }
      Lease other = acquireWithin(second, resource, Duration.ofSeconds(10));
      CompletableFuture<Boolean> anotherThread = new CompletableFuture<>();
      new Thread(() -> anotherThread.complete(lock.tryLock())).start();
      assertThat(anotherThread.get(10, TimeUnit.SECONDS))
          .as("another thread of this JVM before the holder's unlock")
          .isFalse();
      assertThatThrownBy(lock::unlock)
          .isInstanceOf(IllegalMonitorStateException.class)
          .hasMessageContaining("lost while held");
      assertThat(other.isValid()).as("the holder's unlock did not free the new holder").isTrue();
      other.release();
    }
  }

  @Test
  @DisplayName("a keep-alive period not shorter than the TTL is refused")
  void keepAlivePeriodRefused() {
    try (Redlock redlock = redlock()) {
      Lease lease = redlock.tryAcquire("matrix-period", TTL).orElseThrow();
      assertThatThrownBy(
              () -> lease.keepAlive(KeepAlive.defaults().every(TTL.plus(Duration.ofSeconds(8)))))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("shorter than the lease's TTL");
      lease.release();
    }
  }
}
