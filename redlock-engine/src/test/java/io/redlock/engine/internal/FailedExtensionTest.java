package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** A failed extension must never leave the lease claiming more than the nodes may hold. */
class FailedExtensionTest {
  private static final String KEY = "failed-extension";

  @Test
  @DisplayName("a shortening extend whose answers all come late shortens the lease's validity")
  void lateShorteningExtendShortensValidity() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock = cluster.redlock();
    Lease lease = redlock.tryAcquire(KEY, Duration.ofSeconds(30)).orElseThrow();
    // Every extend lands on its store at once, but every answer misses the deadline.
    cluster.nodes.forEach(FaultyNode::slowAnswer);

    assertThat(lease.extend(Duration.ofSeconds(1))).isFalse();
    cluster.nodes.forEach(FaultyNode::deliverLate);

    assertThat(lease.remainingValidity()).isLessThanOrEqualTo(Duration.ofSeconds(1));
    for (FaultyNode node : cluster.nodes) {
      assertThat(node.store.remainingTtl(KEY).orElseThrow())
          .isGreaterThanOrEqualTo(lease.remainingValidity());
    }
    cluster.ticker.advance(Duration.ofSeconds(2));
    Optional<Lease> second = cluster.redlock().tryAcquire(KEY, Duration.ofSeconds(10));
    assertThat(second).as("the keys expired, so another client may lock").isPresent();
    assertThat(lease.isValid()).as("never two valid leases at once").isFalse();
  }

  @Test
  @DisplayName("a lengthening extend that fails keeps the previous validity")
  void failedLengtheningExtendKeepsValidity() {
    Cluster cluster = new Cluster(3);
    Lease lease = cluster.redlock().tryAcquire(KEY, Duration.ofSeconds(10)).orElseThrow();
    Duration before = lease.remainingValidity();
    long start = cluster.ticker.read();
    cluster.nodes.forEach(FaultyNode::slowAnswer);

    assertThat(lease.extend(Duration.ofSeconds(60))).isFalse();

    Duration spent = Duration.ofNanos(cluster.ticker.read() - start);
    assertThat(lease.remainingValidity()).isEqualTo(before.minus(spent));
  }
}
