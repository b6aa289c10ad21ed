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

  @Test
  @DisplayName("R10.1 many threads mixing all operations on one node get consistent answers")
  default void r10_1_oneNodeManyThreads(Harness h) throws InterruptedException {
    LockNode shared = h.node();
    List<String> contended = List.of(h.key("r10.1-c0"), h.key("r10.1-c1"), h.key("r10.1-c2"));
    List<AtomicReference<String>> holders =
        List.of(new AtomicReference<>(), new AtomicReference<>(), new AtomicReference<>());
    Map<String, Integer> problems = new java.util.concurrent.ConcurrentHashMap<>();
    try (Race race = new Race(THREADS, "r10.1")) {
      race.run(
          i ->
              () -> {
                for (int round = 0; round < 15; round++) {
                  int c = (i + round) % contended.size();
                  String k = h.key("r10.1-t" + i + "-" + round);
                  oneRound(h, shared, k, contended.get(c), holders.get(c), problems);
                }
                return null;
              },
          RACE_TIMEOUT);
    }
    assertThat(problems)
        .as("R10.1: answers that differ from what a single thread would get, with their counts")
        .isEmpty();
  }

  /**
   * One thread's round: every operation on its own fresh key {@code k}, then an attempt at the key
   * {@code shared} that other threads contend for, whose holder is tracked in {@code holder}.
   */
  private void oneRound(
      Harness h,
      LockNode n,
      String k,
      String shared,
      AtomicReference<String> holder,
      Map<String, Integer> problems) {
    String mine = token();
    String other = token();
    expect(problems, "tryAcquire of a fresh key", true, h.acquire(n, k, mine, LONG_TTL));
    expect(
        problems,
        "tryAcquire by another token of a held key",
        false,
        h.acquire(n, k, other, LONG_TTL));
    expect(problems, "extend by the owner", true, h.extend(n, k, mine, LONG_TTL));
    expect(problems, "extend by another token", false, h.extend(n, k, other, LONG_TTL));
    expect(problems, "release by another token", false, h.release(n, k, other));
    expect(problems, "release by the owner", true, h.release(n, k, mine));
    expect(problems, "a second release by the owner", false, h.release(n, k, mine));
    if (h.acquire(n, shared, mine, LONG_TTL)) {
      if (!holder.compareAndSet(null, mine)) {
        problems.merge("two threads held a shared key at the same time", 1, Integer::sum);
        return;
      }
      boolean extended = h.extend(n, shared, mine, LONG_TTL);
      expect(problems, "extend of a held shared key by its holder", true, extended);
      holder.set(null);
      boolean released = h.release(n, shared, mine);
      expect(problems, "release of a held shared key by its holder", true, released);
    }
  }

  private void expect(
      Map<String, Integer> problems, String what, boolean expected, boolean actual) {
    if (expected != actual) {
      problems.merge(what + " answered " + actual + ", expected " + expected, 1, Integer::sum);
    }
  }
}
