package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.StaleFencingTokenException;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * {@link RedisFencedWrites} on real servers: leases from a fenced Redlock over three Redis lock
 * nodes, the protected data in another Redis (the module's shared server), and one single-node
 * Redis Cluster to show that a write and its fence key share a slot.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedisFencedWrites on real redis-servers")
class RedisFencedWritesTest {
  private static final Duration LONG_TTL = Duration.ofSeconds(30);

  private static RedisServers lockServers;
  private static Redlock redlock;

  private RedisClient dataClient;
  private Jedis plain;
  private RedisFencedWrites fenced;

  @BeforeAll
  static void startLockNodes() {
    lockServers = RedisServers.start(3);
    redlock =
        Redlock.builder()
            .nodes(lockServers.list().stream().map(s -> RedisLockNode.fromUri(s.uri())).toList())
            .fencing(true)
            // generous for a busy 2-core machine; the default (TTL/50) is for production networks
            .nodeTimeout(Duration.ofMillis(300))
            .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
            .build();
  }

  @AfterAll
  static void stopLockNodes() {
    if (redlock != null) {
      redlock.close();
    }
    if (lockServers != null) {
      lockServers.close();
    }
  }

  @BeforeEach
  void connectToData() {
    RedisServer data = SharedRedis.server();
    dataClient =
        RedisClient.builder()
            .hostAndPort(data.host(), data.port())
            .clientConfig(config(data))
            .build();
    plain = SharedRedis.plainClient();
    fenced = RedisFencedWrites.over(dataClient);
  }

  @AfterEach
  void disconnect() {
    plain.close();
    dataClient.close();
  }

  private static DefaultJedisClientConfig config(RedisServer server) {
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder();
    server.password().ifPresent(config::password);
    return config.build();
  }

  private static String key() {
    return "fenced-data:" + UUID.randomUUID();
  }

  @Test
  @DisplayName(
      "a holder that paused past its validity is refused after a newer holder wrote, and the"
          + " newer value stays")
  void pausedHolderIsRefused() throws InterruptedException {
    String resource = "invoice-" + UUID.randomUUID();
    String key = "invoice:" + resource;

    Lease a = redlock.tryAcquire(resource, Duration.ofMillis(300)).orElseThrow();
    long tokenA = a.fencingToken();
    Thread.sleep(600); // A "pauses" (GC, swap, a slow call) until its lease has run out
    assertThat(a.isValid()).as("A after its pause").isFalse();

    try (Lease b = redlock.tryAcquire(resource, LONG_TTL).orElseThrow()) {
      long tokenB = b.fencingToken();
      assertThat(tokenB).as("B's token").isGreaterThan(tokenA);
      fenced.set(key, "written by B", tokenB);

      // A wakes up and writes what it computed before its pause
      assertThatThrownBy(() -> fenced.set(key, "written by A", tokenA))
          .isInstanceOfSatisfying(
              StaleFencingTokenException.class,
              e -> {
                assertThat(e.resource()).isEqualTo(key);
                assertThat(e.token()).isEqualTo(tokenA);
                assertThat(e.highestAccepted()).isEqualTo(tokenB);
              })
          .hasMessageContaining("is stale");
      assertThat(fenced.trySet(key, "written by A", tokenA)).as("trySet by A").isFalse();
      assertThat(plain.get(key)).isEqualTo("written by B");
      assertThat(fenced.highestAccepted(key)).isEqualTo(OptionalLong.of(tokenB));
    }
    a.close(); // releases nothing: A's keys expired, and B's are B's
  }

  @Test
  @DisplayName("the first write on a fresh key is accepted and records its token beside the key")
  void firstWriteOnFreshKey() {
    String key = key();
    assertThat(fenced.highestAccepted(key)).isEmpty();
    assertThat(fenced.trySet(key, "v1", 42)).isTrue();
    assertThat(plain.get(key)).isEqualTo("v1");
    assertThat(plain.get(RedisFencedWrites.fenceKey(key))).isEqualTo("42");
    assertThat(plain.pttl(RedisFencedWrites.fenceKey(key))).as("fence key expiry").isEqualTo(-1L);
    assertThat(plain.pttl(key)).as("a plain SET keeps no expiry").isEqualTo(-1L);
  }

  @Test
  @DisplayName("one lease may write many times: an equal token is accepted again")
  void equalTokenAcceptedTwice() {
    try (Lease lease = redlock.tryAcquire("eq-" + UUID.randomUUID(), LONG_TTL).orElseThrow()) {
      String key = key();
      long token = lease.fencingToken();
      fenced.set(key, "first", token);
      assertThat(fenced.trySet(key, "second", token)).isTrue();
      fenced.set(key, "third", token);
      assertThat(plain.get(key)).isEqualTo("third");
      assertThat(fenced.highestAccepted(key)).hasValue(token);
    }
  }

  @Test
  @DisplayName("a higher token is accepted and raises the fence; the older one is refused after it")
  void higherTokenRaisesFence() {
    String key = key();
    assertThat(fenced.trySet(key, "t10", 10)).isTrue();
    assertThat(fenced.trySet(key, "t11", 11)).isTrue();
    assertThat(fenced.trySet(key, "t10 again", 10)).isFalse();
    assertThat(plain.get(key)).isEqualTo("t11");
    assertThat(fenced.highestAccepted(key)).hasValue(11);
  }

  @Test
  @DisplayName("an expiry applies to the value only; the fence key outlives it and still refuses")
  void expiryOnValueOnly() throws InterruptedException {
    String key = key();
    fenced.set(key, "short-lived", 7, Duration.ofMillis(150));
    assertThat(plain.pttl(key)).isBetween(1L, 150L);
    Thread.sleep(300);
    assertThat(plain.exists(key)).as("the value expired").isFalse();
    assertThat(fenced.trySet(key, "stale after expiry", 6, Duration.ofSeconds(10))).isFalse();
    assertThat(plain.exists(key)).as("the stale write did not resurrect it").isFalse();
    assertThat(fenced.trySet(key, "newer", 8, Duration.ofSeconds(10))).isTrue();
    assertThat(plain.pttl(key)).isBetween(1L, 10_000L);
  }

  @Test
  @DisplayName("a fenced HSET sets its fields, keeps the others, and refuses a stale token")
  void fencedHset() {
    String key = key();
    plain.hset(key, "untouched", "kept");
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put("amount", "100");
    fields.put("status", "paid");
    assertThat(fenced.tryHset(key, fields, 20)).isTrue();
    fenced.hset(key, Map.of("amount", "120"), 21);

    assertThatThrownBy(() -> fenced.hset(key, Map.of("amount", "999", "status", "void"), 20))
        .isInstanceOf(StaleFencingTokenException.class)
        .hasMessageContaining("fencing token 20 for '" + key + "' is stale: token 21");
    assertThat(fenced.tryHset(key, Map.of("status", "void"), 19)).isFalse();
    assertThat(plain.hgetAll(key))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("untouched", "kept", "amount", "120", "status", "paid"));
  }

  @Test
  @DisplayName("a write the data key's type refuses leaves the fence where it was")
  void failedWriteKeepsFence() {
    String key = key();
    fenced.set(key, "a string", 5);
    assertThatThrownBy(() -> fenced.hset(key, Map.of("f", "v"), 9))
        .isInstanceOf(JedisDataException.class)
        .hasMessageContaining("WRONGTYPE");
    assertThat(fenced.highestAccepted(key)).hasValue(5);
    assertThat(plain.get(key)).isEqualTo("a string");
  }

  @Test
  @DisplayName("tokens beyond 2^53 are compared exactly, up to Long.MAX_VALUE")
  void largeTokensComparedExactly() {
    String key = key();
    long twoTo53 = 1L << 53; // where doubles (Lua numbers) stop telling neighbours apart
    assertThat(fenced.trySet(key, "+2", twoTo53 + 2)).isTrue();
    assertThat(fenced.trySet(key, "+1", twoTo53 + 1)).as("one below").isFalse();
    assertThat(fenced.trySet(key, "+3", twoTo53 + 3)).as("one above").isTrue();
    assertThat(fenced.trySet(key, "max-1", Long.MAX_VALUE - 1)).isTrue();
    assertThat(fenced.trySet(key, "max", Long.MAX_VALUE)).isTrue();
    assertThat(fenced.trySet(key, "max-1 again", Long.MAX_VALUE - 1)).isFalse();
    assertThat(fenced.trySet(key, "short", 9)).as("fewer digits").isFalse();
    assertThat(plain.get(key)).isEqualTo("max");
  }

  @Test
  @DisplayName("a fence key that holds something else is reported, and nothing is written")
  void foreignFenceKeyIsReported() {
    String key = key();
    plain.set(RedisFencedWrites.fenceKey(key), "not a number");
    assertThatThrownBy(() -> fenced.trySet(key, "v", 1))
        .isInstanceOf(JedisDataException.class)
        .hasMessageContaining("does not hold a fencing token");
    assertThat(plain.exists(key)).isFalse();
    assertThatThrownBy(() -> fenced.highestAccepted(key))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("does not hold a fencing token");
  }

  @Test
  @DisplayName("after SCRIPT FLUSH (as after a restart or failover) writes go on through EVAL")
  void scriptCacheFlushed() {
    String key = key();
    assertThat(fenced.trySet(key, "before", 1)).isTrue();
    assertThat(plain.scriptFlush()).isEqualTo("OK");
    assertThat(fenced.trySet(key, "after", 2)).isTrue();
    assertThat(fenced.trySet(key, "stale", 1)).isFalse();
    assertThat(plain.get(key)).isEqualTo("after");
  }

  @Test
  @DisplayName("a plain Jedis connection works as well as a pooled client")
  void overPlainJedis() {
    String key = key();
    RedisFencedWrites overJedis = RedisFencedWrites.over(plain);
    assertThat(overJedis.trySet(key, "via Jedis", 3)).isTrue();
    assertThat(fenced.trySet(key, "via RedisClient, stale", 2)).isFalse();
    assertThat(overJedis.highestAccepted(key)).hasValue(3);
  }

  @Test
  @DisplayName(
      "racing writers with interleaved tokens: the highest token's value is what stays,"
          + " and every lower token that came after it was refused")
  void racingWritersEndWithHighestToken() throws Exception {
    String key = key();
    int writers = 4;
    int tokens = 200;
    List<Long> all = new ArrayList<>(LongStream.rangeClosed(1, tokens).boxed().toList());
    Collections.shuffle(all, new Random(7));
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<Integer>> accepted = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        // writer w takes every writers-th token of the shuffled list: tokens interleave
        int offset = w;
        List<Long> share =
            IntStream.range(0, tokens)
                .filter(i -> i % writers == offset)
                .mapToObj(all::get)
                .toList();
        accepted.add(
            pool.submit(
                () -> {
                  start.await();
                  int ok = 0;
                  for (long t : share) {
                    if (fenced.trySet(key, "value of " + t, t)) {
                      ok++;
                    }
                  }
                  return ok;
                }));
      }
      start.countDown();
      int total = 0;
      for (Future<Integer> f : accepted) {
        total += f.get(60, TimeUnit.SECONDS);
      }
      assertThat(plain.get(key)).isEqualTo("value of " + tokens);
      assertThat(fenced.highestAccepted(key)).hasValue(tokens);
      assertThat(total).as("accepted writes").isBetween(1, tokens);
    } finally {
      pool.shutdownNow();
    }
  }

  @Nested
  @DisplayName("fence keys")
  class FenceKeys {
    @Test
    @DisplayName("are derived in the data key's cluster slot, with or without a hash tag")
    void derivedInSameSlot() {
      assertThat(RedisFencedWrites.fenceKey("invoice:42")).isEqualTo("fence:{invoice:42}");
      assertThat(RedisFencedWrites.fenceKey("user:{42}:profile"))
          .isEqualTo("fence:{42}:user:{42}:profile");
      for (String key :
          List.of(
              "invoice:42",
              "user:{42}:profile",
              "{x}",
              "x",
              "a{b",
              "a{b}c{d}",
              "ü-ñ-{日本}",
              "{{nested}}",
              "a{{b}")) {
        assertThat(JedisClusterCRC16.getSlot(RedisFencedWrites.fenceKey(key)))
            .as("slot of the fence key of %s", key)
            .isEqualTo(JedisClusterCRC16.getSlot(key));
      }
      assertThat(RedisFencedWrites.fenceKey("x"))
          .as("x and {x} keep separate fences")
          .isNotEqualTo(RedisFencedWrites.fenceKey("{x}"));
    }

    @Test
    @DisplayName("cannot be derived for a key with '}' but no hash tag, nor for a fence key")
    void underivable() {
      assertThatThrownBy(() -> RedisFencedWrites.fenceKey("a}b"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("contains '}' but no hash tag")
          .hasMessageContaining("withFenceKeys");
      assertThatThrownBy(() -> RedisFencedWrites.fenceKey("a{}b"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no hash tag");
      assertThatThrownBy(() -> RedisFencedWrites.fenceKey("fence:{x}"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("starts with 'fence:{'");
    }

    @Test
    @DisplayName("can be named by the caller")
    void namedByCaller() {
      String key = key();
      RedisFencedWrites custom = fenced.withFenceKeys(k -> "my-fences:" + k);
      assertThat(custom.trySet(key, "v", 4)).isTrue();
      assertThat(plain.get("my-fences:" + key)).isEqualTo("4");
      assertThat(plain.exists(RedisFencedWrites.fenceKey(key))).isFalse();
      assertThatThrownBy(() -> fenced.withFenceKeys(k -> k).trySet(key, "v", 5))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("differ from the data key");
    }
  }

  @Test
  @DisplayName("bad arguments are refused with a message that says what is wrong")
  void badArguments() {
    assertThatThrownBy(() -> fenced.trySet("", "v", 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key must be a non-empty string");
    assertThatThrownBy(() -> fenced.set(null, "v", 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key must be a non-empty string");
    assertThatThrownBy(() -> fenced.trySet("k", null, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("value must not be null");
    assertThatThrownBy(() -> fenced.trySet("k", "v", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a fencing token is positive, got 0");
    assertThatThrownBy(() -> fenced.set("k", "v", -3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("got -3; pass lease.fencingToken()");
    assertThatThrownBy(() -> fenced.trySet("k", "v", 1, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expiry must be positive");
    assertThatThrownBy(() -> fenced.tryHset("k", Map.of(), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one field");
    Map<String, String> withNull = new LinkedHashMap<>();
    withNull.put("f", null);
    assertThatThrownBy(() -> fenced.hset("k", withNull, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("null names or values");
    assertThatThrownBy(() -> RedisFencedWrites.over((Jedis) null))
        .isInstanceOf(NullPointerException.class);
    assertThat(plain.exists("k")).as("nothing was written").isFalse();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  @DisplayName(
      "on a Redis Cluster, derived fence keys work where a fence key in another slot is refused")
  void onRedisCluster() throws InterruptedException {
    try (RedisServer node = RedisServer.builder().extraArgs("--cluster-enabled", "yes").start()) {
      String[] addSlots = new String[2 + 16384];
      addSlots[0] = "CLUSTER";
      addSlots[1] = "ADDSLOTS";
      for (int slot = 0; slot < 16384; slot++) {
        addSlots[2 + slot] = Integer.toString(slot);
      }
      assertThat(node.command(addSlots)).isEqualTo("+OK");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (!String.valueOf(node.command("CLUSTER", "INFO")).contains("cluster_state:ok")) {
        assertThat(System.nanoTime()).as("cluster state ok within 20 s").isLessThan(deadline);
        Thread.sleep(50);
      }
      try (RedisClusterClient cluster =
          RedisClusterClient.builder()
              .nodes(Set.of(new HostAndPort(node.host(), node.port())))
              .clientConfig(config(node))
              .build()) {
        RedisFencedWrites onCluster = RedisFencedWrites.over(cluster);
        assertThat(onCluster.trySet("invoice:7", "v2", 2)).isTrue();
        assertThat(onCluster.trySet("invoice:7", "v1", 1)).isFalse();
        assertThat(onCluster.trySet("user:{7}:profile", "p", 3)).isTrue();
        assertThat(onCluster.tryHset("cart:{7}", Map.of("item", "1"), 3)).isTrue();
        assertThat(cluster.get("invoice:7")).isEqualTo("v2");

        // the control: a companion outside the key's slot is what the derivation avoids; the
        // cluster client refuses it, and so does the server when a plain connection sends it
        UnaryOperator<String> otherSlot = k -> k + ":fence";
        assertThat(JedisClusterCRC16.getSlot("invoice:8:fence"))
            .isNotEqualTo(JedisClusterCRC16.getSlot("invoice:8"));
        assertThatThrownBy(() -> onCluster.withFenceKeys(otherSlot).trySet("invoice:8", "v", 1))
            .isInstanceOf(JedisClusterOperationException.class)
            .hasMessageContaining("multiple hash slots");
        try (Jedis direct = new Jedis(new HostAndPort(node.host(), node.port()), config(node))) {
          RedisFencedWrites overDirect = RedisFencedWrites.over(direct);
          assertThat(overDirect.trySet("invoice:8", "v", 1)).as("derived fence key").isTrue();
          assertThatThrownBy(() -> overDirect.withFenceKeys(otherSlot).trySet("invoice:9", "v", 1))
              .isInstanceOf(JedisDataException.class)
              .hasMessageContaining("CROSSSLOT");
        }
      }
    }
  }
}
