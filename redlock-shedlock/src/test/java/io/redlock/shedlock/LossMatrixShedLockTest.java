package io.redlock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The loss matrix of docs/safety.md for the ShedLock provider, on three real Redis servers. A
 * ShedLock lock is not kept alive, and its holder learns of a loss only when it extends or unlocks:
 * after each way a lock ends, {@code extend} answers empty, and {@code unlock} (deleting, or moving
 * the expiry to {@code lockAtLeastFor}) leaves another instance's lock as it was. When the lock
 * ends by time (TTL, a pause of the holder, a frozen majority), the other instance is granted it
 * only once the first's {@code lockAtMostFor} is over.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix: ShedLock provider on 3 Redis")
class LossMatrixShedLockTest {
  /** lockAtMostFor: the lease's TTL. */
  private static final Duration TTL = Duration.ofMillis(1_000);

  /** How long B holds what it was granted: past every check. */
  private static final Duration B_HOLDS = Duration.ofMinutes(1);

  private static RedisServers redis;

  private Redlock redlockA;
  private Redlock redlockB;
  private Redlock other;
  private RedlockLockProvider a;
  private RedlockLockProvider b;

  /** How a lock ends. */
  enum Ending {
    /** lockAtMostFor ran out (nobody extended it). */
    TTL_RAN_OUT,
    /** Its key deleted on 2 of 3 nodes, as {@code redlock unlock --force} does. */
    DELETED,
    /** 2 of 3 nodes frozen (SIGSTOP) until the keys ran out. */
    MAJORITY_UNREACHABLE,
    /** Released through another handle of its token, from {@code resume}. */
    RELEASED_ELSEWHERE,
    /** The holder paused (slept) past lockAtMostFor while the other instance took the lock. */
    PAUSED
  }

  @BeforeAll
  static void start() {
    redis = RedisServers.start(3, RedisServer.builder().faultInjection());
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  private static Redlock redlock() {
    return Redlock.builder()
        .nodeUris(redis.uris())
        .nodeTimeout(Duration.ofMillis(200)) // generous for a busy 2-core machine
        .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
        .build();
  }

  @BeforeEach
  void providers() {
    redlockA = redlock();
    redlockB = redlock();
    other = redlock();
    a = new RedlockLockProvider(redlockA);
    b = new RedlockLockProvider(redlockB);
  }

  @AfterEach
  void close() {
    for (RedisServer server : redis) {
      server.resume();
    }
    locksOfB.forEach(SimpleLock::unlock);
    redlockA.close();
    redlockB.close();
    other.close();
  }

  private static LockConfiguration config(String name, Duration atLeast) {
    return new LockConfiguration(ClockProvider.now(), name, TTL, atLeast);
  }

  private String key(String name) {
    return a.resource(name);
  }

  /** The key's value on every node (null where absent). */
  private List<String> values(String name) {
    List<String> out = new ArrayList<>();
    for (RedisServer server : redis) {
      out.add(server.command("GET", key(name)));
    }
    return out;
  }

  /** The value held by a majority of the nodes: the current holder's token. */
  private static String majorityValue(List<String> values) {
    for (String v : values) {
      if (v != null && values.stream().filter(v::equals).count() * 2 > values.size()) {
        return v;
      }
    }
    throw new AssertionError("no token on a majority: " + values);
  }

  /** One of instance A's locks, and when its lock call began. */
  private record Held(String name, SimpleLock lock, long lockCallStart) {}

  private Held lockA(String name, Duration atLeast) {
    long start = System.nanoTime();
    SimpleLock lock = a.lock(config(name, atLeast)).orElseThrow();
    return new Held(name, lock, start);
  }

  /** B's locks, unlocked after each test. */
  private final List<SimpleLock> locksOfB = new ArrayList<>();

  /**
   * B polls for the lock, for at most 10 s; answers when it was granted. B holds it for a minute
   * (until the test ends), however slow the checks that follow.
   */
  private long grantB(String name) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      Optional<SimpleLock> got =
          b.lock(new LockConfiguration(ClockProvider.now(), name, B_HOLDS, Duration.ZERO));
      if (got.isPresent()) {
        locksOfB.add(got.get());
        return System.nanoTime();
      }
      Thread.sleep(20);
    }
    throw new AssertionError("instance B could not take '" + name + "' within 10 s");
  }

  private void end(Ending ending, List<Held> held) throws InterruptedException {
    switch (ending) {
      case TTL_RAN_OUT -> {} // nothing to do: B's polling waits for it
      case DELETED -> {
        for (Held h : held) {
          redis.get(0).command("DEL", key(h.name()));
          redis.get(1).command("DEL", key(h.name()));
        }
      }
      case MAJORITY_UNREACHABLE -> {
        redis.get(0).pause();
        redis.get(1).pause();
        Thread.sleep(TTL.multipliedBy(3).dividedBy(2).toMillis()); // the keys run out meanwhile
        redis.get(0).resume();
        redis.get(1).resume();
      }
      case RELEASED_ELSEWHERE -> {
        for (Held h : held) {
          String token = redis.get(2).command("GET", key(h.name()));
          other.resume(key(h.name()), token, TTL).release();
        }
      }
      case PAUSED -> Thread.sleep(TTL.multipliedBy(2).toMillis());
    }
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Ending.class)
  @DisplayName("after the end, extend is empty and unlock leaves the other instance's lock alone")
  void afterTheEnd(Ending ending) throws Exception {
    String id = UUID.randomUUID().toString();
    Held extended = lockA("extend-" + id, Duration.ZERO);
    Held released = lockA("unlock-" + id, Duration.ZERO);
    // Unlocked before lockAtLeastFor: the unlock moves the expiry instead of deleting.
    Held kept = lockA("at-least-" + id, TTL.multipliedBy(9).dividedBy(10));
    List<Held> all = List.of(extended, released, kept);

    end(ending, all);
    for (Held h : all) {
      long grantedAt = grantB(h.name());
      if (ending != Ending.DELETED && ending != Ending.RELEASED_ELSEWHERE) {
        // Ended by time: B is granted only once A's lockAtMostFor is over.
        assertThat(TimeUnit.NANOSECONDS.toMillis(grantedAt - h.lockCallStart()))
            .as("B granted '%s' after A's lockAtMostFor", h.name())
            .isGreaterThanOrEqualTo(TTL.toMillis());
      }
    }
    List<List<String>> before = new ArrayList<>();
    for (Held h : all) {
      before.add(values(h.name()));
    }

    assertThat(extended.lock().extend(TTL, Duration.ZERO)).as("extend after the end").isEmpty();
    released.lock().unlock();
    kept.lock().unlock();

    for (int i = 0; i < all.size(); i++) {
      Held h = all.get(i);
      // B's token stays wherever B holds it (A may only clean up its own leftovers).
      List<String> was = before.get(i);
      String tokenOfB = majorityValue(was);
      List<String> now = values(h.name());
      for (int node = 0; node < was.size(); node++) {
        if (tokenOfB.equals(was.get(node))) {
          assertThat(now.get(node))
              .as("B's lock on '%s', node %d, after A's extend or unlock", h.name(), node)
              .isEqualTo(tokenOfB);
        }
      }
      assertThat(a.lock(config(h.name(), Duration.ZERO))).as("A takes '%s'", h.name()).isEmpty();
    }
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = Ending.class,
      names = {"DELETED", "MAJORITY_UNREACHABLE", "RELEASED_ELSEWHERE"})
  @DisplayName("extend right after the end, before anyone else takes the lock, is empty")
  void extendRightAfterTheEnd(Ending ending) throws Exception {
    String name = "extend-now-" + UUID.randomUUID();
    Held held = lockA(name, Duration.ZERO);
    try {
      switch (ending) {
        case DELETED -> {
          redis.get(0).command("DEL", key(name));
          redis.get(1).command("DEL", key(name));
        }
        case MAJORITY_UNREACHABLE -> {
          redis.get(0).pause();
          redis.get(1).pause();
        }
        case RELEASED_ELSEWHERE -> {
          String token = redis.get(2).command("GET", key(name));
          other.resume(key(name), token, TTL).release();
        }
        default -> throw new IllegalArgumentException(ending.name());
      }
      assertThat(held.lock().extend(TTL, Duration.ZERO)).as("extend after the end").isEmpty();
    } finally {
      for (RedisServer server : redis) {
        server.resume();
      }
    }
    grantB(name); // and nothing of A's keeps it: its lease was not kept alive
  }
}
