package io.redlock.spi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Replies")
class RepliesTest {

  /** An executor that queues tasks until the test runs them. */
  private static final class Queued implements Executor {
    final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();

    @Override
    public void execute(Runnable command) {
      tasks.add(command);
    }

    void runAll() {
      Runnable r;
      while ((r = tasks.poll()) != null) {
        r.run();
      }
    }
  }

  @Test
  @DisplayName("supplyAsync runs the call on the executor and answers with its result")
  void runsOnExecutor() {
    Queued executor = new Queued();
    Reply<String> reply = Replies.supplyAsync(() -> "yes", executor, "node-a");
    assertThatThrownBy(() -> reply.await(Duration.ZERO)).isInstanceOf(NodeTimeoutException.class);
    executor.runAll();
    assertThat(reply.await(Duration.ofSeconds(1))).isEqualTo("yes");
  }

  @Test
  @DisplayName("failures come out as the SPI's: a RedlockException as is, others as transient")
  void failures() {
    Queued executor = new Queued();
    RedlockNonTransientException denied =
        new RedlockNonTransientException("node-a", "permission denied", null);
    Reply<String> a =
        Replies.supplyAsync(
            () -> {
              throw denied;
            },
            executor,
            "node-a");
    Reply<String> b =
        Replies.supplyAsync(
            () -> {
              throw new IllegalStateException("boom");
            },
            executor,
            "node-a");
    executor.runAll();
    assertThatThrownBy(() -> a.await(Duration.ofSeconds(1))).isSameAs(denied);
    assertThatThrownBy(() -> b.await(Duration.ofSeconds(1)))
        .isInstanceOf(RedlockTransientException.class)
        .hasMessageContaining("node-a")
        .hasMessageContaining("boom");
  }

  @Test
  @DisplayName("a refusing executor gives a failed reply naming the node")
  void rejected() {
    Reply<String> reply =
        Replies.supplyAsync(
            () -> "never",
            command -> {
              throw new RejectedExecutionException("full");
            },
            "node-a");
    assertThatThrownBy(() -> reply.await(Duration.ofSeconds(1)))
        .isInstanceOf(RedlockTransientException.class)
        .hasMessageContaining("node-a")
        .hasMessageContaining("refused the call");
  }

  @Test
  @DisplayName("an abandoned call not started yet is dropped, never run, and ends with no answer")
  void abandonedQueuedIsDropped() {
    Queued executor = new Queued();
    AtomicInteger runs = new AtomicInteger();
    Reply<String> reply = Replies.supplyAsync(() -> "x" + runs.incrementAndGet(), executor, "n");
    AtomicReference<Object> ended = new AtomicReference<>("not yet");
    reply.abandon(ended::set);
    executor.runAll();
    assertThat(runs).hasValue(0);
    assertThat(ended.get()).isNull();
  }

  @Test
  @DisplayName("an abandoned release (not droppable) still runs and reports its answer")
  void abandonedReleaseRuns() {
    Queued executor = new Queued();
    Reply<Boolean> reply = Replies.supplyAsync(() -> true, executor, "n", false);
    AtomicReference<Object> ended = new AtomicReference<>("not yet");
    reply.abandon(ended::set);
    assertThat(ended.get()).isEqualTo("not yet");
    executor.runAll();
    assertThat(ended.get()).isEqualTo(true);
  }

  @Test
  @DisplayName("an abandoned call already running reports its late answer when it ends")
  void abandonedRunningReportsLate() throws InterruptedException {
    CompletableFuture<String> gate = new CompletableFuture<>();
    CountDownLatch started = new CountDownLatch(1);
    Queued executor = new Queued();
    Reply<String> reply =
        Replies.supplyAsync(
            () -> {
              started.countDown();
              return gate.join();
            },
            executor,
            "n");
    Thread worker = new Thread(executor::runAll);
    worker.start();
    assertThat(started.await(5, TimeUnit.SECONDS)).isTrue();
    AtomicReference<Object> ended = new AtomicReference<>("not yet");
    reply.abandon(ended::set);
    gate.complete("late");
    worker.join(5_000);
    assertThat(ended.get()).isEqualTo("late");
  }
}
