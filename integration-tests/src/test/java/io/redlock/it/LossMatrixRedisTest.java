package io.redlock.it;

import static io.redlock.it.LossMatrixSupport.TTL;
import static io.redlock.it.LossMatrixSupport.acquireWithin;
import static io.redlock.it.LossMatrixSupport.end;
import static io.redlock.it.LossMatrixSupport.endAndCheck;
import static io.redlock.it.LossMatrixSupport.redlock;
import static io.redlock.it.LossMatrixSupport.resumeAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLock;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.it.LossMatrixSupport.Ending;
import io.redlock.it.LossMatrixSupport.Extensions;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The loss matrix of docs/safety.md on three real Redis servers, for the lease itself ({@code
 * isValid}, {@code checkValid}, {@code remainingValidity}, {@code extend}, {@code onLost}) and the
 * {@code Lock} adapter: for each way a lease ends, nothing says "held" after the end, the loss is
 * told within a bound, and a second client is granted the lock only after the first stopped saying
 * "held" (checked on timestamps, as chaos checker C1 does). The other entry points have their own
 * classes on {@link LossMatrixSupport}.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix on real servers")
class LossMatrixRedisTest {
  private static RedisServers redis;

  @BeforeAll
  static void start() {
    redis = RedisServers.start(3, RedisServer.builder().faultInjection());
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Ending.class)
  @DisplayName("a lease never says held after its end, tells the loss in time, and frees the lock")
  void lease(Ending ending) throws Exception {
    String resource = "matrix-" + ending;
    Extensions extensions = new Extensions();
    try (Redlock first = redlock(redis, extensions);
        Redlock second = redlock(redis)) {
      Lease lease = first.tryAcquire(resource, TTL).orElseThrow();
      Lease next =
          endAndCheck(
              redis,
              ending,
              lease,
              resource,
              () -> second.resume(resource, lease.token(), TTL).release(),
              second,
              extensions);
      if (ending.ordinal() % 2 == 0) {
        lease.release(); // cleans up; must not free the second holder
      } else { // the same for the release that waits for late replies (redlock exec's)
        lease.releaseAwaitingLate(Duration.ofMillis(500));
      }
      assertThat(lease.isValid()).isFalse();
      assertThat(next.isValid()).as("the second holder after the first's release").isTrue();
      next.release();
    }
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = Ending.class,
      names = {"DELETED", "MAJORITY_UNREACHABLE"})
  @DisplayName("asLock never says locked after a loss, to its holder or to another thread")
  void asLock(Ending ending) throws Exception {
    String resource = "matrix-lock-" + ending;
    try (Redlock redlock = redlock(redis);
        Redlock second = redlock(redis)) {
      LeaseLock lock = redlock.asLock(resource, TTL);
      lock.lock();
      try {
        end(redis, ending, resource, null);
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
        assertThat(lock.lease())
            .as("the holder's lease, as adapters see it (for its fencing token)")
            .hasValueSatisfying(held -> assertThat(held.isValid()).isFalse());
      } finally {
        resumeAll(redis);
      }
      Lease other = acquireWithin(second, resource, Duration.ofSeconds(10));
      other.keepAlive();
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
    try (Redlock redlock = redlock(redis)) {
      Lease lease = redlock.tryAcquire("matrix-period", TTL).orElseThrow();
      assertThatThrownBy(
              () -> lease.keepAlive(KeepAlive.defaults().every(TTL.plus(Duration.ofSeconds(8)))))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("shorter than the lease's TTL");
      lease.release();
    }
  }
}
