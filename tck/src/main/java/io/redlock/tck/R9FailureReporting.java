package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R9 Failure reporting: an unreachable node throws in bounded time, never answers. */
interface R9FailureReporting {

  @Test
  @DisplayName("R9.1 tryAcquire on an unreachable node throws a RedlockException in time")
  default void r9_1_tryAcquireFails(Harness h) {
    tryAcquireFailure(h, "R9.1");
  }

  @Test
  @DisplayName("R9.2 release on an unreachable node throws a RedlockException in time")
  default void r9_2_releaseFails(Harness h) {
    h.assertFailsInTime("R9.2", "release", n -> n.release(h.key("r9.2"), token()));
  }

  @Test
  @DisplayName("R9.3 extend on an unreachable node throws a RedlockException in time")
  default void r9_3_extendFails(Harness h) {
    h.assertFailsInTime("R9.3", "extend", n -> n.extend(h.key("r9.3"), token(), LONG_TTL));
  }

  @Test
  @DisplayName("R9.4 the failure names the node and shows no password")
  default void r9_4_failureNamesNodeWithoutSecret(Harness h) {
    RedlockException failure = tryAcquireFailure(h, "R9.4");
    assertThat(failure.node())
        .as("R9.4: RedlockException.node() of the failure (it must name the node)")
        .isPresent()
        .hasValueSatisfying(name -> assertThat(name).isNotBlank());
    h.assertNoSecret(failure.getMessage(), "R9.4: the failure's message");
    h.assertNoSecret(failure.node().orElse(""), "R9.4: the failure's node()");
  }

  @Test
  @DisplayName("R9.5 the failure of an unreachable node is transient")
  default void r9_5_failureIsTransient(Harness h) {
    assertThat(tryAcquireFailure(h, "R9.5"))
        .as("R9.5: the failure of an unreachable node")
        .isInstanceOf(RedlockTransientException.class);
  }

  /** The failure of tryAcquire on an unreachable node, checked as R9.1 checks it. */
  private RedlockException tryAcquireFailure(Harness h, String rule) {
    String key = h.key(rule.toLowerCase(java.util.Locale.ROOT));
    return h.assertFailsInTime(rule, "tryAcquire", n -> n.tryAcquire(key, token(), LONG_TTL));
  }
}
