package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R10 Thread safety: one node instance serves many threads at once. */
interface R10ThreadSafety {

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
  default void r10_1_oneNodeManyThreads(Harness h) throws InterruptedException {
    LockNode shared = h.node();
    int rounds = 15;
    List<String> contended = List.of(h.key("r10.1-c0"), h.key("r10.1-c1"), h.key("r10.1-c2"));
    List<AtomicReference<String>> holders =
        List.of(new AtomicReference<>(), new AtomicReference<>(), new AtomicReference<>());
    Map<String, Integer> problems = new java.util.concurrent.ConcurrentHashMap<>();
    try (Race race = new Race(THREADS, "r10.1")) {
      race.run(
          i ->
              () -> {
                for (int round = 0; round < rounds; round++) {
                  String k = h.key("r10.1-t" + i + "-" + round);
                  String mine = token();
                  String other = token();
                  expect(
                      h,
                      problems,
                      "tryAcquire of a fresh key",
                      true,
                      h.acquire(shared, k, mine, LONG_TTL));
                  expect(
                      h,
                      problems,
                      "tryAcquire by another token of a held key",
                      false,
                      h.acquire(shared, k, other, LONG_TTL));
                  expect(
                      h,
                      problems,
                      "extend by the owner",
                      true,
                      h.extend(shared, k, mine, LONG_TTL));
                  expect(
                      h,
                      problems,
                      "extend by another token",
                      false,
                      h.extend(shared, k, other, LONG_TTL));
                  expect(
                      h, problems, "release by another token", false, h.release(shared, k, other));
                  expect(h, problems, "release by the owner", true, h.release(shared, k, mine));
                  expect(
                      h,
                      problems,
                      "a second release by the owner",
                      false,
                      h.release(shared, k, mine));

                  int c = (i + round) % contended.size();
                  if (h.acquire(shared, contended.get(c), mine, LONG_TTL)) {
                    if (!holders.get(c).compareAndSet(null, mine)) {
                      problems.merge(
                          "two threads held a shared key at the same time", 1, Integer::sum);
                      continue;
                    }
                    expect(
                        h,
                        problems,
                        "extend of a held shared key by its holder",
                        true,
                        h.extend(shared, contended.get(c), mine, LONG_TTL));
                    holders.get(c).set(null);
                    expect(
                        h,
                        problems,
                        "release of a held shared key by its holder",
                        true,
                        h.release(shared, contended.get(c), mine));
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
      Harness h, Map<String, Integer> problems, String what, boolean expected, boolean actual) {
    if (expected != actual) {
      problems.merge(what + " answered " + actual + ", expected " + expected, 1, Integer::sum);
    }
  }
}
