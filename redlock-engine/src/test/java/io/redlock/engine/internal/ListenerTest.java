package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("The listener")
class ListenerTest {
  private static final Duration TTL = Duration.ofSeconds(10);

  /** Records every call as a line. */
  private static final class Recording implements RedlockListener {
    final List<String> heard = new CopyOnWriteArrayList<>();

    @Override
    public void nodeCall(String node, String operation, Outcome outcome, long nanos) {
      heard.add(node + " " + operation + " " + outcome + (nanos >= 0 ? "" : " negative"));
    }

    @Override
    public void acquisition(String resource, boolean acquired, int attempts, long nanos) {
      heard.add("acquisition " + resource + " " + acquired + " " + attempts);
    }

    @Override
    public void extension(String resource, boolean extended) {
      heard.add("extension " + resource + " " + extended);
    }

    @Override
    public void released(String resource, ReleaseOutcome outcome) {
      heard.add("released " + resource + " " + outcome.deleted());
    }

    @Override
    public void lost(LeaseLost lost) {
      heard.add("lost " + lost.resource() + " " + lost.reason());
    }
  }

  private static QuorumRedlock redlock(Cluster cluster, RedlockListener listener) {
    return new QuorumRedlock(
        List.<LockNode>copyOf(cluster.nodes),
        Cluster.SETTINGS.withRetry(2, Duration.ZERO, Duration.ZERO),
        cluster.ticker,
        Sleeper.SYSTEM,
        new java.util.Random(3),
        false,
        listener);
  }

  @Test
  @DisplayName("hears each node call with its outcome, acquisitions, extensions and releases")
  void hearsEverything() {
    Cluster cluster = new Cluster(3);
    cluster.holdElsewhere("held", 0);
    cluster.node(2).down();
    Recording recording = new Recording();
    QuorumRedlock redlock = redlock(cluster, recording);

    Lease lease = redlock.tryAcquire("free", TTL).orElseThrow();
    lease.extend(TTL);
    lease.release();
    assertThat(redlock.tryAcquire("held", TTL)).isEmpty();

    assertThat(recording.heard)
        .contains(
            "node-0 tryAcquire YES",
            "node-1 tryAcquire YES",
            "node-2 tryAcquire FAILED",
            "acquisition free true 1",
            "node-0 extend YES",
            "extension free true",
            "node-0 release YES",
            "released free 2",
            "node-0 tryAcquire NO",
            "acquisition held false 2")
        .noneMatch(line -> line.endsWith("negative"));
  }

  @Test
  @DisplayName("a listener that throws is ignored, and the lock works on")
  void throwingListener() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock =
        redlock(
            cluster,
            new RedlockListener() {
              @Override
              public void nodeCall(String node, String operation, Outcome outcome, long nanos) {
                throw new IllegalStateException("broken listener");
              }
            });
    assertThat(redlock.tryAcquire("r", TTL)).isPresent();
  }
}
