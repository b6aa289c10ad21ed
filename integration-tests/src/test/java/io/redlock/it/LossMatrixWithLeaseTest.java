package io.redlock.it;

import static io.redlock.it.LossMatrixSupport.TTL;
import static io.redlock.it.LossMatrixSupport.assertNotHeld;
import static io.redlock.it.LossMatrixSupport.endAndCheck;
import static io.redlock.it.LossMatrixSupport.nodesHolding;
import static io.redlock.it.LossMatrixSupport.redlock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.redlock.Lease;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.it.LossMatrixSupport.Ending;
import io.redlock.it.LossMatrixSupport.Extensions;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The loss matrix of docs/safety.md for {@code withLease(resource, ttl, lease -> ...)} on three
 * real Redis servers: the lease handed to the block never says "held" after its end, the loss is
 * told within a bound, a second client is granted the lock only after the block's lease stopped
 * saying "held", nothing is renewed after the loss, and the release at the end of {@code withLease}
 * does not free the second holder.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix: withLease")
class LossMatrixWithLeaseTest {
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
  @DisplayName("the block's lease never says held after its end; the release after does no harm")
  void withLease(Ending ending) throws Exception {
    String resource = "matrix-with-" + ending;
    Extensions extensions = new Extensions();
    try (Redlock first = redlock(redis, extensions);
        Redlock second = redlock(redis)) {
      AtomicReference<Lease> blockLease = new AtomicReference<>();
      AtomicReference<Lease> next = new AtomicReference<>();
      Throwable after =
          catchThrowable(
              () ->
                  first.withLease(
                      resource,
                      TTL,
                      lease -> {
                        blockLease.set(lease);
                        next.set(
                            endAndCheck(
                                redis,
                                ending,
                                lease,
                                resource,
                                () -> second.resume(resource, lease.token(), TTL).release(),
                                second,
                                extensions));
                        return "done";
                      }));
      if (after instanceof AssertionError failed) {
        throw failed;
      }
      assertThat(after)
          .as("withLease reports the loss in the block")
          .isInstanceOf(LeaseLostException.class);
      assertNotHeld(blockLease.get());
      Lease second2 = next.get();
      assertThat(second2.isValid())
          .as("withLease's release after the loss did not free the second holder")
          .isTrue();
      assertThat(nodesHolding(redis, resource, second2.token())).isGreaterThanOrEqualTo(2);
      second2.release();
    }
  }

  /** withLease must not return a result as if the work had run under the lock. */
  @Test
  @DisplayName("withLease throws LeaseLostException when its lease was lost during the block")
  void withLeaseReportsALossInTheBlock() {
    try (Redlock redlock = redlock(redis)) {
      assertThatThrownBy(
              () ->
                  redlock.withLease(
                      "matrix-with-reports",
                      TTL,
                      lease -> {
                        Thread.sleep(TTL.multipliedBy(2).toMillis());
                        return "done";
                      }))
          .isInstanceOf(LeaseLostException.class);
      assertThatThrownBy(
              () ->
                  redlock.withLease(
                      "matrix-with-reports-wait",
                      TTL,
                      TTL,
                      lease -> {
                        redis.get(0).command("DEL", "matrix-with-reports-wait");
                        redis.get(1).command("DEL", "matrix-with-reports-wait");
                        lease.keepAlive();
                        Thread.sleep(TTL.toMillis());
                        return "done";
                      }))
          .isInstanceOf(LeaseLostException.class);
    }
  }
}
