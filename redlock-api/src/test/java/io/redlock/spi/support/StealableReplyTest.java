package io.redlock.spi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("Reply.supplyAsyncOrInline (work stealing)")
class StealableReplyTest {
  private static final Duration WAIT = Duration.ofSeconds(5);

  /** An executor that runs nothing until told to: the test plays the worker. */
  private static final class ManualExecutor implements Executor {
    final Queue<Runnable> queued = new ArrayDeque<>();

    @Override
    public void execute(Runnable command) {
      queued.add(command);
    }

    void runAll() {
      for (Runnable r; (r = queued.poll()) != null; ) {
        r.run();
      }
    }
  }

  /** Records each run: on which thread and with what budget. */
  private static final class Recorder implements Replies.Budgeted<String> {
    final List<Thread> threads = new CopyOnWriteArrayList<>();
    final List<Duration> budgets = new CopyOnWriteArrayList<>();

    @Override
    public String run(Duration budget) {
      threads.add(Thread.currentThread());
      budgets.add(budget);
      return "answer";
    }
  }

  @Test
  @DisplayName("the awaiting thread runs a call no worker has started, with its remaining wait")
  void awaitingThreadRunsQueuedCall() {
    ManualExecutor executor = new ManualExecutor();
    Recorder op = new Recorder();
    Reply<String> reply = Replies.supplyAsyncOrInline(op, () -> true, executor, "node-a");

    assertThat(reply.runsOnAwait()).isTrue();
    assertThat(reply.await(Duration.ofMillis(750))).isEqualTo("answer");
    assertThat(op.threads).containsExactly(Thread.currentThread());
    assertThat(op.budgets).containsExactly(Duration.ofMillis(750));
    assertThat(reply.runsOnAwait()).isFalse();

    executor.runAll(); // the worker gets there late: nothing runs twice
    assertThat(op.threads).hasSize(1);
    assertThat(reply.await(Duration.ZERO)).isEqualTo("answer");
  }

  @Test
  @DisplayName("a worker that gets there first runs the call without a budget")
  void workerRunsFirst() {
    ManualExecutor executor = new ManualExecutor();
    Recorder op = new Recorder();
    Reply<String> reply = Replies.supplyAsyncOrInline(op, () -> true, executor, "node-a");

    reply.send();
    executor.runAll();
    assertThat(reply.runsOnAwait()).isFalse();
    assertThat(reply.await(WAIT)).isEqualTo("answer");
    assertThat(op.budgets).containsExactly((Duration) null);
    assertThat(op.threads).hasSize(1);
  }

  @Test
  @DisplayName("when the backend forbids it, the awaiting thread only waits")
  void inlineNotAllowed() {
    ManualExecutor executor = new ManualExecutor();
    Recorder op = new Recorder();
    Reply<String> reply = Replies.supplyAsyncOrInline(op, () -> false, executor, "node-a");

    assertThat(reply.runsOnAwait()).isFalse();
    assertThatThrownBy(() -> reply.await(Duration.ofMillis(20)))
        .isInstanceOf(NodeTimeoutException.class)
        .hasMessageContaining("node-a");
    assertThat(op.threads).isEmpty();
    executor.runAll();
    assertThat(reply.await(Duration.ZERO)).isEqualTo("answer");
  }

  @Test
  @DisplayName("a zero wait never runs the call on the awaiting thread")
  void zeroWaitDoesNotSteal() {
    ManualExecutor executor = new ManualExecutor();
    Recorder op = new Recorder();
    Reply<String> reply = Replies.supplyAsyncOrInline(op, () -> true, executor, "node-a");

    assertThatThrownBy(() -> reply.await(Duration.ZERO)).isInstanceOf(NodeTimeoutException.class);
    assertThat(op.threads).isEmpty();
    assertThat(reply.runsOnAwait()).isTrue();
  }

  @Test
  @DisplayName("an interrupted thread does not take the call over; it reports the interrupt")
  void interruptedThreadDoesNotSteal() {
    ManualExecutor executor = new ManualExecutor();
    Recorder op = new Recorder();
    Reply<String> reply = Replies.supplyAsyncOrInline(op, () -> true, executor, "node-a");

    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> reply.await(WAIT))
          .isInstanceOf(RedlockTransientException.class)
          .hasMessageContaining("interrupted");
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
    assertThat(op.threads).isEmpty();
  }

  @Test
  @DisplayName("failures of a call run inline come out as await's failures, and no late answer")
  void inlineFailures() {
    ManualExecutor executor = new ManualExecutor();
    RedlockNonTransientException refused =
        new RedlockNonTransientException("node-a", "table missing", null);
    Reply<String> failing =
        Replies.supplyAsyncOrInline(
            budget -> {
              throw refused;
            },
            () -> true,
            executor,
            "node-a");
    assertThatThrownBy(() -> failing.await(WAIT)).isSameAs(refused);

    Reply<String> broken =
        Replies.supplyAsyncOrInline(
            budget -> {
              throw new IllegalStateException("driver bug");
            },
            () -> true,
            executor,
            "node-b");
    assertThatThrownBy(() -> broken.await(WAIT))
        .isInstanceOf(RedlockTransientException.class)
        .hasMessageContaining("node-b")
        .hasMessageContaining("driver bug");

    AtomicReference<String> late = new AtomicReference<>();
    broken.abandon(late::set);
    executor.runAll();
    assertThat(late.get()).isNull();
  }

  @Test
  @DisplayName("a timed-out call run inline reports the timeout the operation raised")
  void inlineTimeout() {
    ManualExecutor executor = new ManualExecutor();
    Reply<String> reply =
        Replies.supplyAsyncOrInline(
            budget -> {
              throw new NodeTimeoutException("node-a", budget);
            },
            () -> true,
            executor,
            "node-a");
    assertThatThrownBy(() -> reply.await(Duration.ofMillis(40)))
        .isInstanceOf(NodeTimeoutException.class)
        .hasMessageContaining("40 ms");
  }

  @Test
  @DisplayName("a refusing executor gives a failed reply naming the node")
  void rejected() {
    Executor refusing =
        r -> {
          throw new RejectedExecutionException("full");
        };
    Reply<String> reply =
        Replies.supplyAsyncOrInline(new Recorder(), () -> true, refusing, "node-a");
    reply.send();
    assertThat(reply.runsOnAwait()).isFalse();
    assertThatThrownBy(() -> reply.await(WAIT))
        .isInstanceOf(RedlockTransientException.class)
        .hasMessageContaining("node-a")
        .hasMessageContaining("refused");
  }

  @Test
  @DisplayName("racing workers and awaiting threads run every call exactly once")
  void exactlyOnceUnderRaces() throws Exception {
    ExecutorService workers = Executors.newFixedThreadPool(2);
    ExecutorService callers = Executors.newFixedThreadPool(3);
    try {
      int calls = 2_000;
      List<AtomicInteger> runs = new ArrayList<>();
      List<java.util.concurrent.Future<String>> answers = new ArrayList<>();
      for (int i = 0; i < calls; i++) {
        AtomicInteger count = new AtomicInteger();
        runs.add(count);
        String value = "v" + i;
        Reply<String> reply =
            Replies.supplyAsyncOrInline(
                budget -> {
                  count.incrementAndGet();
                  return value;
                },
                () -> true,
                workers,
                "node-a");
        reply.send();
        answers.add(callers.submit(() -> reply.await(WAIT)));
      }
      for (int i = 0; i < calls; i++) {
        assertThat(answers.get(i).get(30, TimeUnit.SECONDS)).isEqualTo("v" + i);
      }
      workers.shutdown();
      assertThat(workers.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
      assertThat(runs).allSatisfy(count -> assertThat(count.get()).isEqualTo(1));
    } finally {
      workers.shutdownNow();
      callers.shutdownNow();
    }
  }

  @Nested
  @DisplayName("held until sent, awaited or abandoned")
  class Held {
    @Test
    @DisplayName("a call is held until sent; the awaiting thread runs a held call itself")
    void heldUntilSent() {
      ManualExecutor executor = new ManualExecutor();
      Recorder first = new Recorder();
      Recorder second = new Recorder();
      Reply<String> a = Replies.supplyAsyncOrInline(first, () -> true, executor, "node-a");
      Reply<String> b = Replies.supplyAsyncOrInline(second, () -> true, executor, "node-b");
      assertThat(executor.queued).isEmpty();
      assertThat(a).hasToString("StealableReply[node-a, held]");

      b.send();
      b.send(); // queued once
      assertThat(executor.queued).hasSize(1);
      assertThat(b).hasToString("StealableReply[node-b, queued]");
      assertThat(a.runsOnAwait()).isTrue();
      assertThat(a.await(WAIT)).isEqualTo("answer");
      assertThat(first.threads).containsExactly(Thread.currentThread());
      executor.runAll(); // node-b's worker
      assertThat(second.budgets).containsExactly((Duration) null);
      assertThat(b.await(WAIT)).isEqualTo("answer");
    }

    @Test
    @DisplayName("asked whether it runs on await when it may not any more, it is queued")
    void runsOnAwaitQueuesWhenRefused() {
      ManualExecutor executor = new ManualExecutor();
      AtomicReference<Boolean> allowed = new AtomicReference<>(true);
      Reply<String> reply =
          Replies.supplyAsyncOrInline(new Recorder(), allowed::get, executor, "a");
      allowed.set(false);
      assertThat(reply.runsOnAwait()).isFalse();
      assertThat(executor.queued).hasSize(1);
    }

    @Test
    @DisplayName("a held call that cannot run inline when awaited is queued then")
    void queuedOnAwait() throws Exception {
      ExecutorService worker = Executors.newSingleThreadExecutor();
      try {
        AtomicReference<Boolean> allowed = new AtomicReference<>(true);
        Recorder op = new Recorder();
        Reply<String> reply = Replies.supplyAsyncOrInline(op, allowed::get, worker, "node-a");
        allowed.set(false);
        assertThat(reply.await(WAIT)).isEqualTo("answer");
        assertThat(op.budgets).containsExactly((Duration) null);
        assertThat(op.threads).doesNotContain(Thread.currentThread());
      } finally {
        worker.shutdownNow();
      }
    }

    @Test
    @DisplayName("a zero wait queues a held call instead of leaving it unstarted")
    void zeroWaitQueues() {
      ManualExecutor executor = new ManualExecutor();
      Reply<String> reply = Replies.supplyAsyncOrInline(new Recorder(), () -> true, executor, "a");
      assertThatThrownBy(() -> reply.await(Duration.ZERO)).isInstanceOf(NodeTimeoutException.class);
      assertThat(executor.queued).hasSize(1);
      executor.runAll();
      assertThat(reply.await(Duration.ZERO)).isEqualTo("answer");
    }

    @Test
    @DisplayName("an abandoned held call is dropped, never run, and ends with no answer")
    void abandonedIsDropped() {
      ManualExecutor executor = new ManualExecutor();
      Recorder op = new Recorder();
      Reply<String> reply = Replies.supplyAsyncOrInline(op, () -> true, executor, "node-a");
      List<String> late = new ArrayList<>();
      reply.abandon(late::add);
      executor.runAll();
      assertThat(op.threads).isEmpty();
      assertThat(late).containsExactly((String) null);
    }

    @Test
    @DisplayName(
        "an abandoned call still queued for a worker is dropped when the worker gets to it")
    void abandonedQueuedIsDropped() {
      ManualExecutor executor = new ManualExecutor();
      Recorder op = new Recorder();
      Reply<String> reply = Replies.supplyAsync(() -> op.run(null), executor, "node-a");
      List<String> late = new ArrayList<>();
      reply.abandon(late::add);
      executor.runAll();
      assertThat(op.threads).isEmpty();
      assertThat(late).containsExactly((String) null);
    }

    @Test
    @DisplayName("an abandoned release (not droppable) still runs and reports its answer")
    void abandonedReleaseRuns() {
      ManualExecutor executor = new ManualExecutor();
      Recorder op = new Recorder();
      Reply<String> reply = Replies.supplyAsync(() -> op.run(null), executor, "node-a", false);
      List<String> late = new ArrayList<>();
      reply.abandon(late::add);
      executor.runAll();
      assertThat(op.threads).hasSize(1);
      assertThat(late).containsExactly("answer");
    }

    @Test
    @DisplayName("a release cut short on the awaiting thread runs again on a worker")
    void releaseCutShortInlineRunsAgain() {
      ManualExecutor executor = new ManualExecutor();
      List<Duration> budgets = new ArrayList<>();
      Reply<String> reply =
          Replies.supplyAsyncOrInline(
              budget -> {
                budgets.add(budget);
                if (budget != null) {
                  throw new NodeTimeoutException("node-a", budget); // the statement was cut
                }
                return "deleted";
              },
              () -> true,
              executor,
              "node-a",
              false);
      assertThatThrownBy(() -> reply.await(Duration.ofMillis(50)))
          .isInstanceOf(NodeTimeoutException.class);
      List<String> late = new ArrayList<>();
      reply.abandon(late::add);
      assertThat(late).isEmpty();
      executor.runAll();
      assertThat(budgets).containsExactly(Duration.ofMillis(50), null);
      assertThat(late).containsExactly("deleted");
    }

    @Test
    @DisplayName("an acquire cut short on the awaiting thread is not run again")
    void acquireCutShortInlineEnds() {
      ManualExecutor executor = new ManualExecutor();
      Reply<String> reply =
          Replies.supplyAsyncOrInline(
              budget -> {
                throw new NodeTimeoutException("node-a", budget);
              },
              () -> true,
              executor,
              "node-a");
      assertThatThrownBy(() -> reply.await(Duration.ofMillis(50)))
          .isInstanceOf(NodeTimeoutException.class);
      List<String> late = new ArrayList<>();
      reply.abandon(late::add);
      assertThat(executor.queued).isEmpty();
      assertThat(late).containsExactly((String) null);
    }

    @Test
    @DisplayName("an abandoned call that is running reports its late answer when it ends")
    void abandonedRunningReportsLate() throws Exception {
      java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CountDownLatch finish = new java.util.concurrent.CountDownLatch(1);
      List<String> late = new java.util.concurrent.CopyOnWriteArrayList<>();
      ManualExecutor executor = new ManualExecutor();
      Reply<String> reply =
          Replies.supplyAsync(
              () -> {
                running.countDown();
                try {
                  finish.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                return "late";
              },
              executor,
              "node-a");
      Thread worker = new Thread(executor::runAll);
      worker.start();
      running.await();
      reply.abandon(late::add);
      assertThat(late).isEmpty();
      finish.countDown();
      worker.join(10_000);
      assertThat(late).containsExactly("late");
    }

    @Test
    @DisplayName("abandoning a call that already ran queues nothing")
    void abandonAfterRunQueuesNothing() {
      ManualExecutor executor = new ManualExecutor();
      Reply<String> reply = Replies.supplyAsyncOrInline(new Recorder(), () -> true, executor, "a");
      assertThat(reply.await(WAIT)).isEqualTo("answer");
      reply.abandon(answer -> {});
      assertThat(executor.queued).isEmpty();
    }

    @Test
    @DisplayName("a held call that the executor refuses when it is queued fails naming the node")
    void refusedWhenQueued() {
      AtomicReference<Boolean> allowed = new AtomicReference<>(true);
      Executor refusing =
          r -> {
            throw new RejectedExecutionException("full");
          };
      Reply<String> reply =
          Replies.supplyAsyncOrInline(new Recorder(), allowed::get, refusing, "n");
      assertThat(reply).hasToString("StealableReply[n, held]");
      allowed.set(false);
      assertThatThrownBy(() -> reply.await(WAIT))
          .isInstanceOf(RedlockTransientException.class)
          .hasMessageContaining("refused")
          .hasMessageContaining("n");
    }
  }
}
