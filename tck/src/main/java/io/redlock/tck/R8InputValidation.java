package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static io.redlock.tck.Texts.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.RedlockException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R8 Input validation: bad arguments throw IllegalArgumentException from the call. */
interface R8InputValidation {

  @Test
  @DisplayName("R8.1 a null or empty key is rejected by every operation")
  default void r8_1_badKey(Harness h) {
    for (String bad : new String[] {null, ""}) {
      assertAllReject(h, bad, token(), quoted(bad) + ", token");
    }
  }

  @Test
  @DisplayName("R8.2 a null or empty token is rejected by every operation")
  default void r8_2_badToken(Harness h) {
    String key = h.key("r8.2");
    for (String bad : new String[] {null, ""}) {
      assertAllReject(h, key, bad, "key, " + quoted(bad));
    }
  }

  @Test
  @DisplayName("R8.3 a null, zero or negative TTL is rejected by tryAcquire and extend")
  default void r8_3_badTtl(Harness h) {
    String key = h.key("r8.3");
    String token = token();
    for (Duration bad :
        new Duration[] {null, Duration.ZERO, Duration.ofMillis(-1), Duration.ofSeconds(-30)}) {
      assertTtlRejected(h, key, token, bad, "");
    }
  }

  @Test
  @DisplayName("R8.4 a TTL below the declared precision is rejected by tryAcquire and extend")
  default void r8_4_ttlBelowPrecision(Harness h) {
    Duration precision = h.node().capabilities().ttlPrecision();
    Assumptions.assumeTrue(
        precision.compareTo(Duration.ofNanos(1)) > 0,
        "R8.4 skipped: the node declares a TTL precision of 1 ns, so no TTL is below it");
    String key = h.key("r8.4");
    String token = token();
    for (Duration bad : new Duration[] {precision.minusNanos(1), precision.dividedBy(2)}) {
      if (bad.isZero()) {
        continue;
      }
      assertTtlRejected(h, key, token, bad, " with precision " + precision);
    }
  }

  /** tryAcquire, release and extend reject {@code key} and {@code token} (described as args). */
  private void assertAllReject(Harness h, String key, String token, String args) {
    h.assertRejected(
        "tryAcquire(" + args + ", ttl)", () -> h.node().tryAcquire(key, token, LONG_TTL));
    h.assertRejected("release(" + args + ")", () -> h.node().release(key, token));
    h.assertRejected("extend(" + args + ", ttl)", () -> h.node().extend(key, token, LONG_TTL));
  }

  /** tryAcquire and extend reject the TTL {@code bad}. */
  private void assertTtlRejected(Harness h, String key, String token, Duration bad, String note) {
    String args = "(key, token, " + bad + ")" + note;
    h.assertRejected("tryAcquire" + args, () -> h.node().tryAcquire(key, token, bad));
    h.assertRejected("extend" + args, () -> h.node().extend(key, token, bad));
  }

  @Test
  @DisplayName("R8.5 rejected calls leave the key untouched")
  default void r8_5_rejectedCallsHaveNoEffect(Harness h) {
    String key = h.key("r8.5");
    String token = token();
    List<Supplier<Reply<?>>> bad =
        List.of(
            () -> h.node().tryAcquire(key, "", LONG_TTL),
            () -> h.node().tryAcquire(key, token, Duration.ZERO),
            () -> h.node().tryAcquire(key, token, null),
            () -> h.node().extend(key, token, Duration.ofMillis(-5)),
            () -> h.node().release(key, ""));
    for (Supplier<Reply<?>> call : bad) {
      try {
        Reply<?> reply = call.get();
        reply.await(h.kit().replyTimeout());
      } catch (IllegalArgumentException | RedlockException expected) {
        // R8.1-R8.4 judge how it was rejected; this rule only looks at the effect.
      }
    }
    assertThat(h.acquire(key, token, LONG_TTL))
        .as("R8.5: a valid tryAcquire after rejected calls on the same key")
        .isTrue();
  }
}
