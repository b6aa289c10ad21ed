package io.redlock.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.spi.LockNode;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/** R9's check of one call on an unreachable node: it fails, in time, with the right exception. */
final class FailsInTime {

  private FailsInTime() {}

  /**
   * Runs one call on an unreachable node and checks that it fails with a {@link RedlockException}
   * within {@code bound}; returns the failure.
   */
  static RedlockException check(
      Duration bound,
      String rule,
      String call,
      Function<LockNode, Reply<?>> operation,
      LockNode down) {
    ExecutorService runner =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "redlock-tck-unreachable");
              t.setDaemon(true);
              return t;
            });
    try {
      Future<Outcome> future =
          runner.submit(
              () -> {
                long start = System.nanoTime();
                try {
                  Reply<?> reply = operation.apply(down);
                  Object answer = reply.await(bound);
                  return new Outcome(answer, null, System.nanoTime() - start);
                } catch (Throwable t) {
                  return new Outcome(null, t, System.nanoTime() - start);
                }
              });
      Outcome outcome;
      try {
        outcome = future.get(bound.plusSeconds(5).toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        future.cancel(true);
        return fail(
            "%s: %s on an unreachable node had not returned after %d ms: the call blocks. Give the"
                + " driver connect and read timeouts, and do not wait for the store inside the"
                + " method (LockNode: multiplexing)",
            rule, call, bound.plusSeconds(5).toMillis());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      if (outcome.failure() == null) {
        return fail(
            "%s: %s on an unreachable node answered %s instead of throwing: 'could not ask' must be a"
                + " RedlockException from Reply.await, never an answer. Translate the driver's"
                + " connection errors into RedlockTransientException",
            rule, call, outcome.answer());
      }
      if (outcome.failure() instanceof NodeTimeoutException timeout
          && timeout.timeout().equals(bound)) {
        return fail(
            "%s: %s on an unreachable node neither answered nor failed within %d ms: it hangs. Give"
                + " the driver connect and read timeouts shorter than failureBound()",
            rule, call, bound.toMillis());
      }
      assertThat(outcome.failure())
          .as(
              "%s: %s on an unreachable node must fail with an io.redlock.RedlockException; translate"
                  + " driver exceptions at the backend boundary",
              rule, call)
          .isInstanceOf(RedlockException.class);
      assertThat(Duration.ofNanos(outcome.nanos()))
          .as("%s: %s on an unreachable node: time from the call to the failure", rule, call)
          .isLessThanOrEqualTo(bound.plusMillis(500));
      return (RedlockException) outcome.failure();
    } finally {
      runner.shutdownNow();
    }
  }

  private record Outcome(Object answer, Throwable failure, long nanos) {}
}
