package io.redlock.it;

import static io.redlock.it.LossMatrixSupport.TTL;
import static io.redlock.it.LossMatrixSupport.assertNotHeld;
import static io.redlock.it.LossMatrixSupport.endAndCheck;
import static io.redlock.it.LossMatrixSupport.nodesHolding;
import static io.redlock.it.LossMatrixSupport.redlock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.it.LossMatrixSupport.Ending;
import io.redlock.it.LossMatrixSupport.Extensions;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The loss matrix of docs/safety.md for {@code resume(resource, token, ttl)} on three real Redis
 * servers: a lease taken over from its token by another process (another Redlock) ends in each way;
 * the resumed lease never says "held" after the end, the loss is told, a third client gets the lock
 * only after that, and the old token can no longer be resumed.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix: resume")
class LossMatrixResumeTest {
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
  @DisplayName("a resumed lease never says held after its end, and its token cannot be resumed")
  void resume(Ending ending) throws Exception {
    String resource = "matrix-resume-" + ending;
    Extensions extensions = new Extensions();
    try (Redlock origin = redlock(redis);
        Redlock resumer = redlock(redis, extensions);
        Redlock third = redlock(redis)) {
      Lease original = origin.tryAcquire(resource, TTL).orElseThrow(); // handed on, not kept alive
      Lease resumed = resumer.resume(resource, original.token(), TTL);
      assertThat(resumed.isValid()).isTrue();

      // RELEASED_ELSEWHERE: the original handle releases the token the resumed lease holds.
      Lease next =
          endAndCheck(redis, ending, resumed, resource, original::release, third, extensions);

      assertThatThrownBy(() -> resumer.resume(resource, original.token(), TTL))
          .as("resuming the old token once another client holds the lock")
          .isInstanceOf(LeaseLostException.class);
      assertThatThrownBy(() -> origin.resume(resource, original.token(), TTL))
          .isInstanceOf(LeaseLostException.class);
      resumed.release();
      original.release();
      assertNotHeld(resumed);
      assertThat(next.isValid()).as("the third holder, after both old handles released").isTrue();
      assertThat(nodesHolding(redis, resource, next.token())).isGreaterThanOrEqualTo(2);
      next.release();
    }
  }
}
