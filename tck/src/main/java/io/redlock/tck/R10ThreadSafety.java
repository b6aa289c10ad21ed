package io.redlock.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R10 Thread safety: one node instance serves many threads at once. */
abstract class R10ThreadSafety extends R9FailureReporting {

  /**
   * R10.1: {@value Harness#THREADS} threads share one node instance and mix all operations: each
   * runs acquire, extend and release sequences on its own keys, whose answers must be exactly what
   * a single thread would get, and competes for a few shared keys, which must never have two
   * holders.
   *
   * <p>If this fails, look for state shared between calls without synchronization: one driver
   * connection used by several threads at once (use a pool), a shared {@code PreparedStatement}, a
   * non-thread-safe buffer or codec, or replies handed to the wrong caller.
   */
  @Test
  @DisplayName("R10.1 many threads mixing all operations on one node get consistent answers")
  void r10_1_oneNodeManyThreads() throws InterruptedException {
    LockNode shared = node();
    int rounds = 15;
    List<String> contended = List.of(key("r10.1-c0"), key("r10.1-c1"), key("r10.1-c2"));
    List<AtomicReference<String>> holders =
        List.of(new AtomicReference<>(), new AtomicReference<>(), new AtomicReference<>());
    Map<String, Integer> problems = new java.util.concurrent.ConcurrentHashMap<>();
    try (Race race = new Race(THREADS, "r10.1")) {
      race.run(
          i ->
              () -> {
                for (int round = 0; round < rounds; round++) {
                  String k = key("r10.1-t" + i + "-" + round);
                  String mine = token();
                  String other = token();
                  expect(
                      problems,
                      "tryAcquire of a fresh key",
                      true,
                      acquire(shared, k, mine, LONG_TTL));
                  expect(
                      problems,
                      "tryAcquire by another token of a held key",
                      false,
                      acquire(shared, k, other, LONG_TTL));
                  expect(problems, "extend by the owner", true, extend(shared, k, mine, LONG_TTL));
                  expect(
                      problems,
                      "extend by another token",
                      false,
                      extend(shared, k, other, LONG_TTL));
                  expect(problems, "release by another token", false, release(shared, k, other));
                  expect(problems, "release by the owner", true, release(shared, k, mine));
                  expect(
                      problems, "a second release by the owner", false, release(shared, k, mine));

                  int c = (i + round) % contended.size();
                  if (acquire(shared, contended.get(c), mine, LONG_TTL)) {
                    if (!holders.get(c).compareAndSet(null, mine)) {
                      problems.merge(
                          "two threads held a shared key at the same time", 1, Integer::sum);
                      continue;
                    }
                    expect(
                        problems,
                        "extend of a held shared key by its holder",
                        true,
                        extend(shared, contended.get(c), mine, LONG_TTL));
                    holders.get(c).set(null);
                    expect(
                        problems,
                        "release of a held shared key by its holder",
                        true,
                        release(shared, contended.get(c), mine));
                  }
                }
                return null;
              },
          RACE_TIMEOUT);
    }
    assertThat(problems)
        .as("R10.1: answers that differ from what a single thread would get, with their counts")
        .isEmpty();
  }

  private void expect(
      Map<String, Integer> problems, String what, boolean expected, boolean actual) {
    if (expected != actual) {
      problems.merge(what + " answered " + actual + ", expected " + expected, 1, Integer::sum);
    }
  }
}
