package io.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("FencingGuard, the protected resource's side of fencing")
class FencingGuardTest {

  @Test
  @DisplayName("accepts a token at least as high as the highest accepted, refuses a lower one")
  void acceptsOnlyCurrentTokens() {
    FencingGuard guard = new FencingGuard();

    assertThat(guard.highestAccepted("invoice-42")).isEmpty();
    assertThat(guard.tryAccept("invoice-42", 33)).isTrue();
    assertThat(guard.tryAccept("invoice-42", 33)).as("the same lease writes again").isTrue();
    assertThat(guard.tryAccept("invoice-42", 34)).as("a newer lease").isTrue();
    assertThat(guard.tryAccept("invoice-42", 33)).as("the older lease, after the newer").isFalse();
    assertThat(guard.highestAccepted("invoice-42")).hasValue(34);
    assertThat(guard.tryAccept("invoice-43", 1)).as("resources are independent").isTrue();
  }

  @Test
  @DisplayName("runs a fenced action only for a current token and says why it refused one")
  void runFenced() {
    FencingGuard guard = new FencingGuard();
    List<String> writes = new ArrayList<>();

    guard.runFenced("invoice-42", 34, () -> writes.add("by 34"));
    assertThatThrownBy(() -> guard.runFenced("invoice-42", 33, () -> writes.add("by 33")))
        .isInstanceOf(StaleFencingTokenException.class)
        .hasMessageContaining("fencing token 33 for 'invoice-42' is stale: token 34 was accepted")
        .satisfies(
            e -> {
              StaleFencingTokenException stale = (StaleFencingTokenException) e;
              assertThat(stale.resource()).isEqualTo("invoice-42");
              assertThat(stale.token()).isEqualTo(33);
              assertThat(stale.highestAccepted()).isEqualTo(34);
            });
    assertThat(writes).containsExactly("by 34");
  }

  @Test
  @DisplayName("keeps a token recorded even when its action fails")
  void recordsBeforeTheAction() {
    FencingGuard guard = new FencingGuard();

    assertThatThrownBy(
            () ->
                guard.runFenced(
                    "r",
                    7,
                    () -> {
                      throw new java.io.IOException("disk full");
                    }))
        .isInstanceOf(java.io.IOException.class);
    assertThat(guard.tryAccept("r", 6)).isFalse();
  }

  @Test
  @DisplayName("under racing writers, no write with a lower token lands after a higher one")
  void racingWriters() throws Exception {
    FencingGuard guard = new FencingGuard();
    long[] lastWritten = {0}; // the protected data: guarded only by the fence
    Queue<String> problems = new ConcurrentLinkedQueue<>();
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(
            pool.submit(
                () -> {
                  go.await(10, TimeUnit.SECONDS);
                  for (int i = 0; i < 2_000; i++) {
                    long token = 1 + ThreadLocalRandom.current().nextLong(500);
                    try {
                      guard.runFenced(
                          "r",
                          token,
                          () -> {
                            if (token < lastWritten[0]) {
                              problems.add(token + " written after " + lastWritten[0]);
                            }
                            lastWritten[0] = token;
                            return null;
                          });
                    } catch (StaleFencingTokenException expected) {
                      // an older holder, refused
                    }
                  }
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(problems).isEmpty();
    assertThat(guard.highestAccepted("r")).hasValue(lastWritten[0]);
  }

  @Test
  @DisplayName("rejects an empty resource and a token that is not positive, and forgets on demand")
  void validationAndForget() {
    FencingGuard guard = new FencingGuard();

    assertThatThrownBy(() -> guard.tryAccept("", 1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> guard.tryAccept("r", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("fencingToken()");
    guard.tryAccept("r", 9);
    guard.forget("r");
    assertThat(guard.highestAccepted("r")).isEmpty();
    assertThat(guard.tryAccept("r", 1)).isTrue();
  }
}
