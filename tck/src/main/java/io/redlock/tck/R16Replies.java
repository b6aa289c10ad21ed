package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.redlock.NodeTimeoutException;
import io.redlock.spi.AcquireResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * R16 Replies: {@code await} with a zero timeout polls, and an abandoned reply ends exactly once.
 * The engine awaits every node's reply against one deadline and abandons the ones that miss it; it
 * counts on each abandoned reply to tell it, once, how the call ended, so that it can release a
 * late "acquired" and know when a node has nothing in flight.
 */
interface R16Replies {

  @Test
  @DisplayName("R16.1 await(Duration.ZERO) answers at once or throws NodeTimeoutException")
  default void r16_1_awaitZeroPolls(Harness h) {
    for (int i = 0; i < 5; i++) {
      Started call = start(h, "r16.1");
      long begin = System.nanoTime();
      try {
        assertThat(call.reply().await(Duration.ZERO))
            .as("R16.1: the answer of await(Duration.ZERO) to tryAcquire of a fresh key")
            .isEqualTo(AcquireResult.ACQUIRED);
      } catch (NodeTimeoutException notYet) {
        call.reply().abandon(late -> {}); // the contract: a reply that timed out is abandoned
      } catch (RuntimeException e) {
        fail(
            "R16.1: await(Duration.ZERO) threw %s; it must answer or throw NodeTimeoutException",
            e);
      }
      assertThat(Duration.ofNanos(System.nanoTime() - begin))
          .as("R16.1: how long await(Duration.ZERO) took (a poll must not wait for the store)")
          .isLessThan(Duration.ofSeconds(1));
    }
  }

  @Test
  @DisplayName("R16.2 an abandoned reply ends exactly once, with its answer or null")
  default void r16_2_abandonedReplyEndsOnce(Harness h) throws InterruptedException {
    Ending ending = abandonOne(h, "R16.2", false);
    assertThat(ending.calls().get())
        .as(
            "R16.2: times ended was called (once, and %d ms later still once)",
            AFTERWARDS.toMillis())
        .isEqualTo(1);
    Object late = ending.value().get();
    if (late != null) {
      assertThat(late)
          .as("R16.2: the late answer of tryAcquire of a fresh key")
          .isEqualTo(AcquireResult.ACQUIRED);
      h.assertHeldBy(
          ending.call().key(), ending.call().token(), "R16.2: after a late \"acquired\",");
    }
  }

  @Test
  @DisplayName("R16.3 a call abandoned before it was sent is dropped, not sent late")
  default void r16_3_droppedCallHasNoEffect(Harness h) throws InterruptedException {
    Ending ending = abandonOne(h, "R16.3", true);
    sleepUntil(System.nanoTime() + AFTERWARDS.toNanos());
    h.assertAbsent(
        ending.call().key(),
        "R16.3: an abandoned tryAcquire that ended with null (dropped) was run all the same:");
  }

  // R16.4 (a sent call runs while nobody awaits it) was removed with Reply.send().

  /** A tryAcquire of a fresh key; the key is released after the test, whatever happens. */
  private Started start(Harness h, String label) {
    String key = h.key(label);
    String token = token();
    h.held.add(new Held(key, token));
    return new Started(key, token, h.node().tryAcquire(key, token, LONG_TTL));
  }

  /**
   * Starts bursts of calls until a zero-timeout await finds the last call of a burst unanswered,
   * abandons it and waits for its end; with {@code dropped}, until such a call ends with null.
   * Skips the rule if none does. (The burst makes the last call wait behind the others.)
   */
  private Ending abandonOne(Harness h, String rule, boolean dropped) throws InterruptedException {
    String label = rule.toLowerCase(java.util.Locale.ROOT);
    int answered = 0;
    for (int i = 0; i < TRIES; i++) {
      List<Started> burst = new ArrayList<>();
      for (int b = 0; b < BURST; b++) {
        burst.add(start(h, label));
      }
      Started last = burst.get(BURST - 1);
      Ending ending = null;
      try {
        last.reply().await(Duration.ZERO);
        answered++;
      } catch (NodeTimeoutException notYet) {
        ending = abandon(h, last);
      }
      for (Started other : burst.subList(0, BURST - 1)) {
        other.reply().await(h.kit().replyTimeout());
      }
      if (ending == null || (dropped && ending.ended() && ending.value().get() != null)) {
        continue; // answered at once, or (for R16.3) sent already and ended with its answer
      }
      sleepUntil(System.nanoTime() + AFTERWARDS.toNanos());
      assertTrue(
          ending.ended(),
          "%s: an abandoned reply called ended within %s (R16.2)",
          rule,
          h.kit().replyTimeout());
      return ending;
    }
    return Assumptions.abort(
        String.format(
            "%s skipped: of the last calls of %d bursts of %d, %d were answered before a"
                + " zero-timeout await returned%s, so there was nothing to %s",
            rule,
            TRIES,
            BURST,
            answered,
            dropped ? " and the others had been sent already (they ended with their answer)" : "",
            dropped ? "drop" : "abandon"));
  }

  /** Abandons {@code call} and waits for its end, up to {@code replyTimeout()}. */
  private Ending abandon(Harness h, Started call) throws InterruptedException {
    AtomicInteger calls = new AtomicInteger();
    AtomicReference<Object> value = new AtomicReference<>();
    CountDownLatch first = new CountDownLatch(1);
    call.reply()
        .abandon(
            late -> {
              value.set(late);
              calls.incrementAndGet();
              first.countDown();
            });
    boolean ended = first.await(h.kit().replyTimeout().toNanos(), TimeUnit.NANOSECONDS);
    return new Ending(call, ended, calls, value);
  }
}
