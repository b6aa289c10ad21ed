package io.redlock.it;

import static io.redlock.it.LossMatrixSupport.SECOND_HOLDER_WITHIN;
import static io.redlock.it.LossMatrixSupport.TTL;
import static io.redlock.it.LossMatrixSupport.acquireWithin;
import static io.redlock.it.LossMatrixSupport.assertNotHeld;
import static io.redlock.it.LossMatrixSupport.endAndCheck;
import static io.redlock.it.LossMatrixSupport.redlock;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.Redlock;
import io.redlock.it.LossMatrixSupport.Ending;
import io.redlock.it.LossMatrixSupport.Extensions;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
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
 * The loss matrix of docs/safety.md for {@code acquireAll(resources, ttl, maxWait)} on three real
 * Redis servers. Each ending strikes one part (resource "a"; a majority pause strikes both): the
 * whole lease stops saying "held", the loss is told, a second client gets "a" only after that, and
 * every part is free once the lost lease is released.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix: acquireAll")
class LossMatrixAcquireAllTest {
  private static RedisServers redis;

  @BeforeAll
  static void start() {
    redis = RedisServers.start(3, RedisServer.builder().faultInjection());
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  /** The token of {@code resource}'s part of a lease from acquireAll. */
  private static String tokenOf(Lease lease, String resource) {
    List<String> resources = Arrays.asList(lease.resource().split(","));
    return lease.token().split(",")[resources.indexOf(resource)];
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Ending.class)
  @DisplayName("a lease over several resources never says held after any part ended")
  void acquireAll(Ending ending) throws Exception {
    String a = "matrix-all-" + ending + "-a";
    String b = "matrix-all-" + ending + "-b";
    Extensions extensions = new Extensions();
    try (Redlock first = redlock(redis, extensions);
        Redlock second = redlock(redis);
        Redlock third = redlock(redis)) {
      Lease lease = first.acquireAll(List.of(b, a), TTL, Duration.ofSeconds(5));
      String tokenA = tokenOf(lease, a);
      Lease nextA =
          endAndCheck(
              redis,
              ending,
              lease,
              a,
              () -> second.resume(a, tokenA, TTL).release(),
              second,
              extensions);

      lease.release(); // cleans up the other part; must not free the second holder of "a"
      assertNotHeld(lease);
      assertThat(nextA.isValid()).as("the second holder of a, after the release").isTrue();
      Lease nextB = acquireWithin(third, b, SECOND_HOLDER_WITHIN);
      nextB.release();
      nextA.release();
    }
  }

  /**
   * When one part of a lease from acquireAll is lost, the lease is lost as a whole (onLost fires,
   * isValid is false), so the other parts are no longer renewed: a lost lease must not keep
   * resources locked until the caller releases it.
   */
  @Test
  @DisplayName("when one part is lost, the other parts are no longer renewed")
  void aLostPartStopsTheOthers() throws Exception {
    String a = "matrix-all-part-a";
    String b = "matrix-all-part-b";
    Extensions extensions = new Extensions();
    try (Redlock first = redlock(redis, extensions);
        Redlock second = redlock(redis)) {
      Lease lease = first.acquireAll(List.of(a, b), TTL, Duration.ofSeconds(5));
      lease.keepAlive();
      CompletableFuture<LeaseLost> lost = new CompletableFuture<>();
      lease.onLost(lost::complete);
      redis.get(0).command("DEL", a);
      redis.get(1).command("DEL", a);
      assertThat(lost.get(10, TimeUnit.SECONDS).reason()).isEqualTo(LeaseLost.Reason.TOKEN_GONE);
      Thread.sleep(TTL.toMillis() / 2); // a renewal of b in flight at the loss may still end
      int renewalsOfB = extensions.of(b);
      Thread.sleep(TTL.toMillis());
      assertThat(extensions.of(b))
          .as("renewals of b after the lease was lost")
          .isEqualTo(renewalsOfB);
      // Not released by the caller: b must still be free within its TTL.
      acquireWithin(second, b, TTL.plusSeconds(3)).release();
      lease.release();
    }
  }
}
