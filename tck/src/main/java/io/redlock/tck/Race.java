package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * Runs the same task on several threads released at the same instant, so that calls really overlap.
 * Threads are daemons (a stuck backend call cannot keep the JVM alive) and are always shut down by
 * {@link #close()}.
 */
final class Race implements AutoCloseable {
  private final int threads;
  private final ExecutorService pool;

  Race(int threads, String name) {
    this.threads = threads;
    AtomicInteger n = new AtomicInteger();
    this.pool =
        Executors.newFixedThreadPool(
            threads,
            r -> {
              Thread t = new Thread(r, "redlock-tck-" + name + "-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Runs {@code task.apply(i)} for every thread index {@code i}, all started together, and returns
   * their results in index order. The first failure of any thread is rethrown as it is.
   *
   * @throws AssertionError if the threads do not all finish within {@code timeout}
   */
  <T> List<T> run(IntFunction<Callable<T>> task, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<T>> futures = new ArrayList<>(threads);
    for (int i = 0; i < threads; i++) {
      Callable<T> body = task.apply(i);
      futures.add(
          pool.submit(
              () -> {
                ready.countDown();
                // Bounded so that a lost thread cannot park the others forever.
                if (!go.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                  throw new AssertionError("the race never started");
                }
                return body.call();
              }));
    }
    try {
      if (!ready.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        throw new AssertionError(
            "only " + (threads - ready.getCount()) + " of " + threads + " threads started");
      }
      go.countDown();
      List<T> results = new ArrayList<>(threads);
      for (Future<T> f : futures) {
        long left = deadline - System.nanoTime();
        results.add(f.get(Math.max(left, 0), TimeUnit.NANOSECONDS));
      }
      return results;
    } catch (TimeoutException e) {
      throw new AssertionError(
          threads
              + " threads did not finish within "
              + timeout.toMillis()
              + " ms; a backend call is hanging or far too slow",
          e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Error error) {
        throw error;
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw new IllegalStateException(cause);
    } finally {
      go.countDown();
      futures.forEach(f -> f.cancel(true));
    }
  }

  /** A call made by a key's owner: release or extend. */
  interface OwnerCall {
    boolean call(LockNode node, String key, String owner);
  }

  /**
   * One round of {@link #atExpiry}: the owner's answer and the tokens of the clients that acquired
   * the key (a second one only if the first one's key was deleted or lost).
   */
  record Takeover(String key, boolean ownerAnswer, List<String> takers) {}

  /**
   * Races an owner's call against a takeover at the key's expiry, in rounds: each round a fresh key
   * is acquired with a short TTL, then one client makes {@code ownerCall} at a moment spread around
   * the expected expiry while two other clients try to acquire the key from just before it until
   * one wins or the key must long be gone. A non-atomic read-then-write is caught when the key
   * expires and is taken between its read and its write. Coarse stores get only a few rounds: the
   * kit cannot aim at a tick it cannot see.
   */
  static List<Takeover> atExpiry(Harness h, String rule, OwnerCall ownerCall)
      throws InterruptedException {
    int rounds = h.precision().compareTo(Duration.ofMillis(100)) > 0 ? 3 : 12;
    Duration ttl = h.ttl(Duration.ofMillis(50));
    List<LockNode> clients = List.of(h.newNode(), h.newNode(), h.newNode());
    List<Takeover> out = new ArrayList<>();
    try (Race race = new Race(3, rule)) {
      for (int round = 0; round < rounds; round++) {
        String key = h.key(rule.toLowerCase(Locale.ROOT) + "-round" + round);
        String owner = token();
        List<String> takers = List.of(token(), token());
        long start = System.nanoTime();
        assertThat(h.acquire(clients.get(0), key, owner, ttl)).isTrue();
        long answered = System.nanoTime();
        long expiry = start + (answered - start) / 2 + ttl.toNanos();
        // From 6 ms before the expected expiry to 2 ms after it, widened by the round trip.
        long rtt = answered - start;
        long at = expiry - 6_000_000L - rtt + (8_000_000L + 2 * rtt) * round / (rounds - 1);
        long giveUp = answered + ttl.plus(h.precision()).plus(h.kit().expiryTolerance()).toNanos();
        List<Object> results =
            race.run(
                i ->
                    () -> {
                      if (i == 0) {
                        sleepUntil(at);
                        return ownerCall.call(clients.get(0), key, owner);
                      }
                      sleepUntil(expiry - 3_000_000L);
                      while (System.nanoTime() - giveUp < 0) {
                        if (h.acquire(clients.get(i), key, takers.get(i - 1), LONG_TTL)) {
                          return takers.get(i - 1);
                        }
                        Thread.yield();
                      }
                      return null;
                    },
                RACE_TIMEOUT);
        List<String> took =
            results.subList(1, 3).stream()
                .filter(Objects::nonNull)
                .map(String.class::cast)
                .toList();
        out.add(new Takeover(key, (Boolean) results.get(0), took));
      }
    }
    return out;
  }

  @Override
  public void close() {
    pool.shutdownNow();
    try {
      pool.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
