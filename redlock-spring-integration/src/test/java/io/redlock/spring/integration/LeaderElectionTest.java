package io.redlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.FencingGuard;
import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * Leader election with Spring Integration's {@link LockRegistryLeaderInitiator}: two instances
 * (each its own Redlock and registry) on one quorum of 3 real Redis servers, with the fencing token
 * of the leader's lease as its epoch.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("Leader election on RedlockLockRegistry, 3 Redis")
class LeaderElectionTest {
  private static final Duration TTL = Duration.ofSeconds(3);
  private static RedisServers redis;

  private final List<Instance> instances = new ArrayList<>();

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3);
  }

  @AfterAll
  static void stopServers() {
    if (redis != null) {
      redis.close();
    }
  }

  @AfterEach
  void stopInstances() {
    for (Instance i : instances) {
      i.close();
    }
  }

  /** What a candidate heard: granted (with its epoch) or revoked. */
  record Event(String instance, boolean granted, long epoch) {}

  /** One application instance: its Redlock, registry, and leader initiator. */
  final class Instance implements AutoCloseable {
    final String id;
    final Redlock redlock;
    final RedlockLockRegistry registry;
    final LockRegistryLeaderInitiator initiator;

    Instance(String id, String role, BlockingQueue<Event> events, AtomicInteger leaders) {
      this.id = id;
      this.redlock =
          Redlock.builder()
              .nodeUris(redis.uris())
              .nodeTimeout(Duration.ofMillis(500))
              .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
              .fencing(true)
              .build();
      this.registry = new RedlockLockRegistry(redlock, TTL, "leader:");
      this.initiator =
          new LockRegistryLeaderInitiator(
              registry,
              new DefaultCandidate(id, role) {
                @Override
                public void onGranted(Context context) {
                  leaders.incrementAndGet();
                  // the epoch: the fencing token of the lease this leadership stands on
                  events.add(new Event(id, true, registry.fencingToken(role).orElseThrow()));
                }

                @Override
                public void onRevoked(Context context) {
                  leaders.decrementAndGet();
                  events.add(new Event(id, false, 0));
                }
              });
      initiator.setHeartBeatMillis(200);
      initiator.setBusyWaitMillis(50);
      instances.add(this);
    }

    @Override
    public void close() {
      try {
        initiator.destroy();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      } finally {
        redlock.close();
      }
    }
  }

  private static Event next(BlockingQueue<Event> events) throws InterruptedException {
    Event e = events.poll(20, TimeUnit.SECONDS);
    assertThat(e).as("a leadership event within 20 s").isNotNull();
    return e;
  }

  @Test
  @DisplayName(
      "one of two instances leads; when it stops, the other leads with a higher epoch, and a"
          + " write with the old epoch is refused")
  void handover() throws Exception {
    String role = "role-" + UUID.randomUUID();
    BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    AtomicInteger leaders = new AtomicInteger();
    Instance a = new Instance("A", role, events, leaders);
    Instance b = new Instance("B", role, events, leaders);
    a.initiator.start();
    b.initiator.start();

    Event first = next(events);
    assertThat(first.granted()).isTrue();
    Thread.sleep(1_000); // several heartbeats: the other instance must not lead meanwhile
    assertThat(events).isEmpty();
    assertThat(leaders).hasValue(1);
    Instance leader = first.instance().equals("A") ? a : b;
    assertThat(leader.initiator.getContext().isLeader()).isTrue();

    FencingGuard store = new FencingGuard(); // the protected resource's side
    assertThat(store.tryAccept(role, first.epoch())).isTrue();

    leader.initiator.stop();
    // the initiator unlocks before it publishes the revocation, so the other instance may be
    // granted first: the two events come in either order
    Event one = next(events);
    Event two = next(events);
    Event revoked = one.granted() ? two : one;
    Event second = one.granted() ? one : two;
    assertThat(revoked).isEqualTo(new Event(first.instance(), false, 0));
    assertThat(second.granted()).isTrue();
    assertThat(second.instance()).isNotEqualTo(first.instance());
    assertThat(second.epoch()).isGreaterThan(first.epoch());
    assertThat(leaders).hasValue(1);

    assertThat(store.tryAccept(role, second.epoch())).isTrue();
    assertThat(store.tryAccept(role, first.epoch())).as("the deposed leader's write").isFalse();
  }

  @Test
  @DisplayName(
      "a leader whose lease is lost is revoked at its next heartbeat, and the next leader has a"
          + " higher epoch")
  void leaseLost() throws Exception {
    String role = "role-" + UUID.randomUUID();
    BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    AtomicInteger leaders = new AtomicInteger();
    Instance a = new Instance("A", role, events, leaders);
    a.initiator.start();
    Event first = next(events);
    assertThat(first).extracting(Event::instance, Event::granted).containsExactly("A", true);
    Instance b = new Instance("B", role, events, leaders);
    b.initiator.start();
    Thread.sleep(500);
    assertThat(events).isEmpty();

    for (RedisServer server : redis) { // the lock's keys vanish (e.g. an operator's mistake)
      server.command("DEL", "leader:" + role);
    }
    // B may be granted before A's heartbeat notices: the epochs are what keeps them apart
    boolean revoked = false;
    Event granted = null;
    while (!revoked || granted == null) {
      Event e = next(events);
      if (e.equals(new Event("A", false, 0))) {
        revoked = true;
      } else if (e.granted() && granted == null) {
        granted = e;
      }
    }
    assertThat(granted.epoch()).isGreaterThan(first.epoch());
  }
}
