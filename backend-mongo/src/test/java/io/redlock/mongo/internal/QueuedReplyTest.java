package io.redlock.mongo.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
@DisplayName("QueuedReply")
class QueuedReplyTest {

  @Test
  @DisplayName("a call abandoned while still queued is never run")
  void abandonedWhileQueuedIsSkipped() throws InterruptedException {
    ExecutorService one = Executors.newSingleThreadExecutor();
    CountDownLatch busy = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger ran = new AtomicInteger();
    try {
      QueuedReply.submit(
          () -> {
            busy.countDown();
            await(release);
            return 0;
          },
          one,
          "node");
      busy.await();
      Reply<Integer> queued = QueuedReply.submit(ran::incrementAndGet, one, "node");
      assertThatThrownBy(() -> queued.await(Duration.ofMillis(50)))
          .isInstanceOf(NodeTimeoutException.class);
      queued.abandon(late -> ran.addAndGet(100));
      assertThat(((QueuedReply<Integer>) queued).skipped()).isTrue();
      release.countDown();
    } finally {
      one.shutdown();
      assertThat(one.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(ran).hasValue(0);
  }

  @Test
  @DisplayName("a call abandoned while running finishes and hands its answer to the callback")
  void abandonedWhileRunningDeliversLateAnswer() throws InterruptedException {
    ExecutorService one = Executors.newSingleThreadExecutor();
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<String> late = new AtomicReference<>();
    CountDownLatch delivered = new CountDownLatch(1);
    try {
      Reply<String> running =
          QueuedReply.submit(
              () -> {
                started.countDown();
                await(release);
                return "acquired";
              },
              one,
              "node");
      started.await();
      assertThatThrownBy(() -> running.await(Duration.ZERO))
          .isInstanceOf(NodeTimeoutException.class);
      running.abandon(
          answer -> {
            late.set(answer);
            delivered.countDown();
          });
      release.countDown();
      assertThat(delivered.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(late).hasValue("acquired");
    } finally {
      one.shutdownNow();
    }
  }

  @Test
  @DisplayName("a refused submission is a transient failure naming the node")
  void refused() {
    ExecutorService closed = Executors.newSingleThreadExecutor();
    closed.shutdown();
    Reply<Integer> reply = QueuedReply.submit(() -> 1, closed, "mongodb://h:1");
    assertThatThrownBy(() -> reply.await(Duration.ofSeconds(1)))
        .isInstanceOf(RedlockTransientException.class)
        .hasMessageContaining("mongodb://h:1")
        .hasMessageContaining("worker pool");
  }

  @Test
  @DisplayName("answers and failures of a call that ran are returned by await")
  void answersAndFailures() {
    ExecutorService one = Executors.newSingleThreadExecutor();
    try {
      assertThat(QueuedReply.submit(() -> 42, one, "n").await(Duration.ofSeconds(10)))
          .isEqualTo(42);
      RedlockTransientException failure = new RedlockTransientException("n", "down", null);
      assertThatThrownBy(
              () ->
                  QueuedReply.<Integer>submit(
                          () -> {
                            throw failure;
                          },
                          one,
                          "n")
                      .await(Duration.ofSeconds(10)))
          .isSameAs(failure);
    } finally {
      one.shutdownNow();
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("test latch not released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
