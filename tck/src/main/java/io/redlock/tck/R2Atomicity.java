package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R2 Atomicity: exactly one of many concurrent callers acquires a key. */
interface R2Atomicity {

  @Test
  @DisplayName("R2.1 of many threads racing on one node, exactly one acquires, every round")
  default void r2_1_oneNodeManyThreads(Harness h) throws InterruptedException {
    LockNode shared = h.node();
    raceRounds(h, "R2.1", i -> shared);
  }

  @Test
  @DisplayName("R2.2 of several separate node instances racing on one key, exactly one acquires")
  default void r2_2_separateClients(Harness h) throws InterruptedException {
    List<LockNode> clients = h.clients();
    raceRounds(h, "R2.2", i -> clients.get(i % CLIENTS));
  }

  @Test
  @DisplayName("R2.3 threads incrementing a non-atomic counter under the key lose no update")
  default void r2_3_mutualExclusionFuzz(Harness h) throws InterruptedException {
    List<LockNode> clients = h.clients();
    String key = h.key("r2.3");
    AtomicInteger counter = new AtomicInteger(); // incremented by a get and a set: not atomic
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger mostInside = new AtomicInteger();
    Map<String, Integer> problems = new java.util.concurrent.ConcurrentHashMap<>();
    long deadline = System.nanoTime() + RACE_TIMEOUT.toNanos() - Duration.ofSeconds(5).toNanos();
    try (Race race = new Race(THREADS, "r2.3")) {
      race.run(
          i ->
              () -> {
                LockNode client = clients.get(i % CLIENTS);
                int done = 0;
                while (done < INCREMENTS_PER_THREAD) {
                  if (System.nanoTime() > deadline) {
                    problems.merge(
                        "a thread could not finish its increments before the deadline: the key never became free",
                        1,
                        Integer::sum);
                    return null;
                  }
                  String mine = token();
                  if (h.acquire(client, key, mine, LONG_TTL)) {
                    mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    int seen = counter.get();
                    Thread.sleep(1); // widens the window in which a second holder loses updates
                    counter.set(seen + 1);
                    inside.decrementAndGet();
                    if (!h.release(client, key, mine)) {
                      problems.merge("a holder's release answered false", 1, Integer::sum);
                    }
                    done++;
                  } else {
                    Thread.sleep(ThreadLocalRandom.current().nextInt(1, 3));
                  }
                }
                return null;
              },
          RACE_TIMEOUT);
    }
    int expected = THREADS * INCREMENTS_PER_THREAD;
    SoftAssertions soft = new SoftAssertions();
    soft.assertThat(mostInside.get())
        .as("R2.3: most threads holding the key at the same time (must be 1)")
        .isEqualTo(1);
    soft.assertThat(counter.get())
        .as("R2.3: counter after %d increments under the key (lost updates = overlap)", expected)
        .isEqualTo(expected);
    soft.assertThat(problems).as("R2.3: problems seen by the threads, with their counts").isEmpty();
    soft.assertAll();
  }

  private void raceRounds(
      Harness h, String rule, java.util.function.IntFunction<LockNode> nodeOfThread)
      throws InterruptedException {
    try (Race race = new Race(THREADS, rule)) {
      for (int round = 0; round < ROUNDS; round++) {
        String key = h.key(rule.toLowerCase(java.util.Locale.ROOT) + "-round" + round);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
          tokens.add(token());
        }
        List<Boolean> won =
            race.run(
                i -> () -> h.acquire(nodeOfThread.apply(i), key, tokens.get(i), LONG_TTL),
                RACE_TIMEOUT);
        List<String> winners = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
          if (won.get(i)) {
            winners.add(tokens.get(i));
          }
        }
        assertThat(winners)
            .as(
                "%s: round %d: %d threads raced tryAcquire on one absent key; tokens that"
                    + " were told acquired=true (exactly one expected)",
                rule, round, THREADS)
            .hasSize(1);
        h.assertHeldBy(key, winners.get(0), rule + " round " + round);
        assertTrue(
            h.release(key, winners.get(0)), "%s: round %d: the winner's release", rule, round);
      }
    }
  }
}
