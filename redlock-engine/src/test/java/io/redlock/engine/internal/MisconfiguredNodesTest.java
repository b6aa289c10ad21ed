package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.NodeFailure;
import io.redlock.NodesMisconfiguredException;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Nodes that fail in a way no retry fixes")
class MisconfiguredNodesTest {
  private static final String KEY = "misconfigured";
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final String MISSING = "table redlock_locks does not exist (injected)";

  private final ByteArrayOutputStream log = new ByteArrayOutputStream();
  private PrintStream stderr;

  @BeforeEach
  void captureLog() {
    stderr = System.err; // slf4j-simple writes to the System.err of the moment
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restoreLog() {
    System.setErr(stderr);
    System.err.print(log.toString(StandardCharsets.UTF_8));
  }

  private long logLines(String text) {
    return log.toString(StandardCharsets.UTF_8).lines().filter(l -> l.contains(text)).count();
  }

  @Test
  @DisplayName(
      "one of five is outvoted: the lease names who granted and who failed, and the cause is"
          + " logged once at WARN")
  void outvotedAndReported() {
    Cluster cluster = new Cluster(5);
    cluster.node(2).misconfigured(MISSING);
    QuorumRedlock redlock = cluster.redlock(Cluster.SETTINGS.withStrictNodes(false));

    Lease lease = redlock.tryAcquire(KEY, TTL).orElseThrow();
    for (int i = 0; i < 10; i++) {
      redlock.tryAcquire(KEY + i, TTL).orElseThrow().release();
    }

    assertThat(lease.grantedNodes()).containsExactly("node-0", "node-1", "node-3", "node-4");
    List<NodeFailure> failed = lease.failedNodes();
    assertThat(failed).hasSize(1);
    assertThat(failed.get(0).node()).isEqualTo("node-2");
    assertThat(failed.get(0).isTransient()).isFalse();
    assertThat(failed.get(0).toString()).isEqualTo("node-2: " + MISSING);
    assertThat(logLines("node-2 fails in a way no retry fixes: node-2: " + MISSING)).isEqualTo(1);
    assertThat(logLines("WARN")).isEqualTo(1); // not also "is down"
  }

  @Test
  @DisplayName("a lease on healthy nodes names them all and no failure")
  void healthyLease() {
    Cluster cluster = new Cluster(3);
    Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

    assertThat(lease.grantedNodes()).containsExactly("node-0", "node-1", "node-2");
    assertThat(lease.failedNodes()).isEmpty();
  }

  @Test
  @DisplayName(
      "too many for a quorum: tryAcquire and acquire stop at once, naming each node and cause")
  void stopAtOnce() {
    Cluster cluster = new Cluster(5);
    for (int i = 0; i < 3; i++) {
      cluster.node(i).misconfigured(MISSING);
    }
    QuorumRedlock redlock = cluster.redlock();
    long before = cluster.ticker.read();

    assertThatThrownBy(() -> redlock.tryAcquire(KEY, TTL))
        .isInstanceOfSatisfying(
            NodesMisconfiguredException.class,
            e ->
                assertThat(e.failures())
                    .extracting(NodeFailure::node)
                    .containsExactly("node-0", "node-1", "node-2"))
        .hasMessageContaining("3 of 5 nodes fail in a way no retry fixes")
        .hasMessageContaining("node-1: " + MISSING);
    assertThatThrownBy(() -> redlock.acquire(KEY, TTL, Duration.ofSeconds(30)))
        .isInstanceOf(NodesMisconfiguredException.class);

    assertThat(cluster.acquireCalls()).containsExactly(2, 2, 2, 2, 2); // one attempt each
    assertThat(cluster.ticker.read() - before).as("no pause, no retry").isZero();
    assertThat(cluster.holding(KEY)).isZero();
  }

  @Test
  @DisplayName("by default (strict nodes), one such node fails the acquisition and nothing is held")
  void strict() {
    Cluster cluster = new Cluster(5);
    cluster.node(4).misconfigured(MISSING);
    QuorumRedlock redlock = cluster.redlock();

    assertThatThrownBy(() -> redlock.tryAcquire(KEY, TTL))
        .isInstanceOf(NodesMisconfiguredException.class)
        .hasMessageContaining("strictNodes is on")
        .hasMessageContaining("node-4: " + MISSING);
    assertThat(cluster.acquireCalls()).containsExactly(1, 1, 1, 1, 1);
    assertThat(cluster.holding(KEY)).isZero();
  }

  @Test
  @DisplayName("an unknown host is a misconfigured node, whatever the backend called it")
  void unknownHost() {
    Cluster cluster = new Cluster(3);
    cluster
        .node(2)
        .throwing(
            new io.redlock.RedlockTransientException(
                "node-2",
                "could not connect",
                new java.net.UnknownHostException("no-such-host.invalid")));
    QuorumRedlock redlock = cluster.redlock();
    long before = cluster.ticker.read();

    assertThatThrownBy(() -> redlock.acquire(KEY, TTL, Duration.ofSeconds(30)))
        .isInstanceOf(NodesMisconfiguredException.class)
        .hasMessageContaining("node-2: unknown host (no-such-host.invalid)")
        .hasMessageContaining("check the host name");
    assertThat(cluster.holding(KEY)).isZero();
    assertThat(cluster.ticker.read() - before).as("no retry pause").isZero();

    QuorumRedlock outvoting = cluster.redlock(Cluster.SETTINGS.withStrictNodes(false));
    assertThat(outvoting.tryAcquire(KEY, TTL).orElseThrow().failedNodes())
        .singleElement()
        .satisfies(f -> assertThat(f.isTransient()).isFalse());
  }

  @Test
  @DisplayName("build() names a misconfigured node at start, unless strictNodes(false)")
  void refusedAtBuild() {
    Cluster cluster = new Cluster(3);
    cluster.node(1).misconfigured(MISSING);
    List<LockNode> nodes = List.copyOf(cluster.nodes);

    assertThatThrownBy(() -> new QuorumRedlock(nodes, Cluster.SETTINGS, cluster.ticker))
        .isInstanceOf(NodesMisconfiguredException.class)
        .hasMessageContaining("node-1: " + MISSING)
        .hasMessageContaining("strictNodes(false)");
    try (QuorumRedlock lenient =
        new QuorumRedlock(nodes, Cluster.SETTINGS.withStrictNodes(false), cluster.ticker)) {
      assertThat(lenient.tryAcquire(KEY, TTL)).isPresent();
    }
    assertThat(logLines("strictNodes is off and a node fails")).isOne();
  }

  @Test
  @DisplayName("transient failures keep retrying as before, even with strictNodes")
  void transientRetries() {
    Cluster cluster = new Cluster(5);
    for (int i = 0; i < 3; i++) {
      cluster.node(i).down();
    }
    QuorumRedlock redlock = cluster.redlock(Cluster.SETTINGS.withStrictNodes(true));

    assertThat(redlock.tryAcquire(KEY, TTL)).isEmpty();
    assertThat(cluster.acquireCalls()).containsExactly(3, 3, 3, 3, 3);
    assertThatThrownBy(() -> redlock.acquire(KEY, TTL, Duration.ofMillis(500)))
        .isInstanceOf(LockTimeoutException.class);
  }

  /** A second name for one in-memory store: what two URIs of one server look like. */
  private static final class Alias implements LockNode {
    private final InMemoryLockNode store;
    private final String name;

    Alias(InMemoryLockNode store, String name) {
      this.store = store;
      this.name = name;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public NodeCapabilities capabilities() {
      return store.capabilities();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return store.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return store.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return store.extend(key, token, ttl);
    }

    @Override
    public Reply<NodeStatus> status() {
      return store.status();
    }

    @Override
    public void close() {}
  }

  @Test
  @DisplayName("one server listed twice is refused at build, naming both names")
  void oneServerTwiceIsRefused() {
    InMemoryLockNode shared = new InMemoryLockNode("server-a");
    List<LockNode> nodes =
        List.of(
            new Alias(shared, "redis://127.0.0.1:6379"),
            new Alias(shared, "redis://localhost:6379"),
            new InMemoryLockNode("server-b"));

    assertThatThrownBy(() -> new QuorumRedlock(nodes, RedlockSettings.defaults(), Ticker.system()))
        .isInstanceOf(NodesMisconfiguredException.class)
        .hasMessageContaining("cannot build the Redlock")
        .hasMessageContaining("one server listed twice")
        .hasMessageContaining("redis://127.0.0.1:6379: one server with redis://localhost:6379")
        .satisfies(
            e ->
                assertThat(((NodesMisconfiguredException) e).failures())
                    .extracting(NodeFailure::node)
                    .containsExactly("redis://127.0.0.1:6379", "redis://localhost:6379"));
    assertThat(shared.tryAcquire("k", "t", TTL).await(Duration.ZERO).acquired())
        .as("the caller's nodes stay open")
        .isTrue();
    try (QuorumRedlock allowed =
        new QuorumRedlock(
            nodes, RedlockSettings.defaults().withSharedServers(true), Ticker.system())) {
      assertThat(allowed.tryAcquire(KEY, TTL))
          .as("allowSharedServers(): a test's quorum")
          .isPresent();
    }
  }

  @Test
  @DisplayName("separate servers are accepted")
  void separateServersPass() {
    List<LockNode> nodes =
        List.of(new InMemoryLockNode("a"), new InMemoryLockNode("b"), new InMemoryLockNode("c"));
    try (QuorumRedlock redlock =
        new QuorumRedlock(nodes, RedlockSettings.defaults(), Ticker.system())) {
      assertThat(redlock.tryAcquire(KEY, TTL)).isPresent();
    }
  }
}
