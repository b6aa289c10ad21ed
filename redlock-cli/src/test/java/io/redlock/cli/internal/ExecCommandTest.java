package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("exec's acquisition: what a failure means, and when --no-wait asks again")
class ExecCommandTest {
  private static final Duration TTL = Duration.ofSeconds(10);

  /** The reference node; refuses its first {@code failures} acquisitions as if it were down. */
  private static final class FlakyNode implements LockNode {
    final InMemoryLockNode delegate;
    final AtomicInteger failuresLeft;
    final AtomicInteger acquisitions = new AtomicInteger();

    FlakyNode(String name, int failures) {
      this.delegate = new InMemoryLockNode(name);
      this.failuresLeft = new AtomicInteger(failures);
    }

    @Override
    public String name() {
      return delegate.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return delegate.capabilities();
    }

    @Override
    public Reply<io.redlock.spi.NodeStatus> status() {
      return delegate.status();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      acquisitions.incrementAndGet();
      if (failuresLeft.getAndDecrement() > 0) {
        return Reply.failed(new RedlockTransientException(name(), "connection refused", null));
      }
      return delegate.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return delegate.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return delegate.extend(key, token, ttl);
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
  }

  private ExecCommand exec(List<FlakyNode> nodes, boolean noWait) {
    ExecCommand exec = new ExecCommand();
    exec.nodeOptions = new NodeOptions();
    exec.o = new ExecOptions();
    exec.o.lockName = "job";
    exec.o.ttl = TTL;
    exec.o.noWait = noWait;
    exec.redlock = Redlock.builder().nodes(List.copyOf(nodes)).build();
    toClose.add(exec.redlock);
    return exec;
  }

  private static List<FlakyNode> nodes(int... failures) {
    List<FlakyNode> out = new ArrayList<>();
    for (int i = 0; i < failures.length; i++) {
      out.add(new FlakyNode("mem://" + i, failures[i]));
    }
    return out;
  }

  @Test
  @DisplayName("--no-wait asks again when too few nodes answered, and gets the lock")
  void noWaitRetriesUnreachable() throws Exception {
    List<FlakyNode> nodes = nodes(1, 1, 0);

    Lease lease = exec(nodes, true).acquire(Duration.ZERO);

    assertThat(lease.isValid()).isTrue();
    assertThat(nodes.get(2).acquisitions).hasValue(2);
    lease.release();
  }

  @Test
  @DisplayName("--no-wait gives up after " + ExecCommand.NO_WAIT_ATTEMPTS + " attempts: exit 69")
  void noWaitGivesUpOnUnreachable() {
    List<FlakyNode> nodes = nodes(100, 100, 0);

    assertThatThrownBy(() -> exec(nodes, true).acquire(Duration.ZERO))
        .isInstanceOfSatisfying(
            LockTimeoutException.class,
            e -> assertThat(ExecCommand.classify(e)).isEqualTo(ExecCommand.Failure.UNREACHABLE));
    assertThat(nodes.get(2).acquisitions).hasValue(ExecCommand.NO_WAIT_ATTEMPTS);
  }

  @Test
  @DisplayName("--no-wait makes one attempt only when the lock is held, even if a node is down")
  void noWaitDoesNotRetryBusy() throws Exception {
    List<FlakyNode> nodes = nodes(0, 0, 100);
    ExecCommand holder = exec(nodes, true);
    Lease held = holder.acquire(Duration.ZERO);
    int before = nodes.get(0).acquisitions.get();

    assertThatThrownBy(() -> exec(nodes, true).acquire(Duration.ZERO))
        .isInstanceOfSatisfying(
            LockTimeoutException.class,
            e -> {
              assertThat(e.unreachableNodes()).containsExactly("mem://2");
              assertThat(ExecCommand.classify(e)).isEqualTo(ExecCommand.Failure.BUSY);
            });
    assertThat(nodes.get(0).acquisitions.get() - before).isEqualTo(1);
    held.release();
  }

  @Test
  @DisplayName("without --no-wait a node that is down is not retried by exec itself")
  void waitLeavesRetriesToTheEngine() {
    List<FlakyNode> nodes = nodes(100, 100, 0);

    assertThatThrownBy(() -> exec(nodes, false).acquire(Duration.ZERO))
        .isInstanceOf(LockTimeoutException.class);
    assertThat(nodes.get(2).acquisitions).hasValue(1);
  }

  @Test
  @DisplayName("tells a quarantine failure from a busy lock by the engine's reason")
  void classifiesQuarantine() {
    LockTimeoutException e =
        new LockTimeoutException(
            "job",
            Duration.ofMillis(5),
            LockTimeoutException.Reason.RESTART_QUARANTINE,
            "acquired on 3 of 3 nodes, but only 0 votes count (a quorum needs 2): restart"
                + " quarantine leaves out ...",
            List.of(),
            null);

    assertThat(ExecCommand.classify(e)).isEqualTo(ExecCommand.Failure.QUARANTINE);
  }

  @Test
  @DisplayName("--quarantine must be positive and at least --ttl")
  void quarantineChecked() {
    Restarts.check(null, TTL);
    Restarts.check(TTL, TTL);
    assertThatThrownBy(() -> Restarts.check(Duration.ofSeconds(9), TTL))
        .isInstanceOfSatisfying(
            CliException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCodes.USAGE))
        .hasMessageStartingWith("--ttl (10s) is longer than --quarantine (9s)");
    assertThatThrownBy(() -> Restarts.check(Duration.ZERO, TTL))
        .hasMessageContaining("--quarantine must be positive");
  }
}
