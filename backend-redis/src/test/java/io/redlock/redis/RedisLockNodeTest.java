package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;

@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedisLockNode on a real redis-server")
class RedisLockNodeTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(5);

  private final List<LockNode> nodes = new ArrayList<>();

  @AfterEach
  void closeNodes() {
    nodes.forEach(LockNode::close);
  }

  private RedisLockNode node(String uri) {
    RedisLockNode node = RedisLockNode.fromUri(uri);
    nodes.add(node);
    return node;
  }

  private RedisLockNode node() {
    return node(SharedRedis.server().uri());
  }

  private static String key() {
    return "redlock-test:" + UUID.randomUUID();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  /** Polls until the node has lent out no connection, for at most 5 s. */
  private static void assertAllConnectionsReturned(RedisLockNode node) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (node.activeConnections() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(node.activeConnections()).as("connections still lent out").isZero();
  }

  @Nested
  @DisplayName("stores keys as the canonical algorithm does")
  class CanonicalKeys {

    @Test
    @DisplayName("an acquired key is a plain string holding the token with a millisecond expiry")
    void keyIsPlainString() {
      RedisLockNode node = node();
      String key = key();
      String token = token();
      assertThat(node.tryAcquire(key, token, Duration.ofMillis(10_500)).await(WAIT).acquired())
          .isTrue();
      try (Jedis plain = SharedRedis.plainClient()) {
        assertThat(plain.type(key)).isEqualTo("string");
        assertThat(plain.get(key)).isEqualTo(token);
        assertThat(plain.pttl(key)).isBetween(9_000L, 10_500L);
      }
    }

    @Test
    @DisplayName("a key set by another client with SET NX PX excludes this node")
    void otherClientExcludesUs() {
      RedisLockNode node = node();
      String key = key();
      try (Jedis plain = SharedRedis.plainClient()) {
        assertThat(plain.set(key, "theirs", SetParams.setParams().nx().px(30_000))).isEqualTo("OK");
        assertThat(node.tryAcquire(key, token(), TTL).await(WAIT)).isEqualTo(AcquireResult.HELD);
        assertThat(node.release(key, token()).await(WAIT)).isFalse();
        assertThat(node.extend(key, token(), TTL).await(WAIT)).isFalse();
        assertThat(plain.get(key)).isEqualTo("theirs");
        assertThat(node.release(key, "theirs").await(WAIT))
            .as("their token releases their key through our script")
            .isTrue();
        assertThat(plain.exists(key)).isFalse();
      }
    }

    @Test
    @DisplayName("a key held by this node excludes another client's SET NX PX")
    void weExcludeOtherClients() {
      RedisLockNode node = node();
      String key = key();
      String token = token();
      assertThat(node.tryAcquire(key, token, TTL).await(WAIT).acquired()).isTrue();
      try (Jedis plain = SharedRedis.plainClient()) {
        assertThat(plain.set(key, "theirs", SetParams.setParams().nx().px(30_000))).isNull();
        Object deleted =
            plain.eval(
                "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1])"
                    + " else return 0 end",
                List.of(key),
                List.of(token));
        assertThat(deleted).as("another Redlock client releases with our token").isEqualTo(1L);
      }
    }

    @Test
    @DisplayName("a key prefix is prepended to every key, and only prefixed keys are touched")
    void keyPrefix() {
      RedisLockNode node = node(SharedRedis.server().uri() + "?keyPrefix=app1:");
      String key = key();
      String token = token();
      assertThat(node.tryAcquire(key, token, TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.storedKey(key)).isEqualTo("app1:" + key);
      try (Jedis plain = SharedRedis.plainClient()) {
        assertThat(plain.get("app1:" + key)).isEqualTo(token);
        assertThat(plain.exists(key)).isFalse();
        plain.set(key, "unprefixed");
        assertThat(node.extend(key, token, TTL).await(WAIT)).isTrue();
        assertThat(node.release(key, token).await(WAIT)).isTrue();
        assertThat(plain.exists("app1:" + key)).isFalse();
        assertThat(plain.get(key)).isEqualTo("unprefixed");
      }
    }

    @Test
    @DisplayName("nodes with other prefixes or TTLs in one fan-out each send their own command")
    void commandsSharedOnlyWhenEqual() {
      RedisLockNode a = node(SharedRedis.server().uri() + "?keyPrefix=fan-a:");
      RedisLockNode b = node(SharedRedis.server().uri() + "?keyPrefix=fan-b:");
      RedisLockNode c = node(SharedRedis.server().uri() + "?keyPrefix=fan-b:");
      String key = key();
      String token = token();
      // as the engine does: the same key and token to every node, from one thread
      assertThat(a.tryAcquire(key, token, TTL).await(WAIT).acquired()).isTrue();
      assertThat(b.tryAcquire(key, token, Duration.ofSeconds(90)).await(WAIT).acquired()).isTrue();
      assertThat(c.tryAcquire(key, token, TTL).await(WAIT).acquired())
          .as("the same stored key as b's")
          .isFalse();
      RedisLockNode d = node(SharedRedis.server().uri() + "?keyPrefix=fan-b:");
      assertThat(b.tryAcquire(key, token, Duration.ofSeconds(90)).await(WAIT).acquired())
          .as("held already")
          .isFalse();
      assertThat(d.tryAcquire(key, token, Duration.ofSeconds(90)).await(WAIT).acquired())
          .as("b's command, sent by d")
          .isFalse();
      assertThatThrownBy(() -> d.tryAcquire(key, token, null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ttl");
      try (Jedis plain = SharedRedis.plainClient()) {
        assertThat(plain.get("fan-a:" + key)).isEqualTo(token);
        assertThat(plain.pttl("fan-a:" + key)).isBetween(1L, TTL.toMillis());
        assertThat(plain.pttl("fan-b:" + key)).isGreaterThan(TTL.toMillis());
        assertThat(a.release(key, token).await(WAIT)).isTrue();
        assertThat(plain.exists("fan-a:" + key)).isFalse();
        assertThat(plain.get("fan-b:" + key)).as("b's key is not a's").isEqualTo(token);
        assertThat(b.release(key, token).await(WAIT)).isTrue();
        assertThat(c.release(key, token).await(WAIT)).as("already released through b").isFalse();
        assertThat(plain.exists("fan-b:" + key)).isFalse();
      }
    }

    @Test
    @DisplayName("the database index of the URI selects the database that holds the keys")
    void databaseIndex() {
      RedisLockNode node = node(SharedRedis.server().uri() + "/3");
      String key = key();
      String token = token();
      assertThat(node.name()).endsWith("/3");
      assertThat(node.tryAcquire(key, token, TTL).await(WAIT).acquired()).isTrue();
      try (Jedis db0 = SharedRedis.plainClient();
          Jedis db3 = SharedRedis.plainClient(SharedRedis.server(), 3)) {
        assertThat(db0.exists(key)).isFalse();
        assertThat(db3.get(key)).isEqualTo(token);
      }
      assertThat(node.release(key, token).await(WAIT)).isTrue();
    }

    @Test
    @DisplayName("a sub-millisecond remainder of a TTL is rounded up, never down")
    void ttlRoundedUp() {
      RedisLockNode node = node();
      String key = key();
      assertThat(node.tryAcquire(key, token(), Duration.ofNanos(20_000_001)).await(WAIT).acquired())
          .isTrue();
      try (Jedis plain = SharedRedis.plainClient()) {
        // PX 21 was sent; the server may already have counted a millisecond or two down
        assertThat(plain.pttl(key)).isBetween(1L, 21L);
      }
    }
  }

  @Nested
  @DisplayName("scripts")
  class ScriptCache {

    @Test
    @DisplayName("release and extend still work after SCRIPT FLUSH (NOSCRIPT falls back to EVAL)")
    void noscriptFallback() throws InterruptedException {
      RedisLockNode node = node();
      String key = key();
      String token = token();
      assertThat(node.tryAcquire(key, token, TTL).await(WAIT).acquired()).isTrue();
      try (Jedis plain = SharedRedis.plainClient()) {
        plain.scriptFlush();
        assertThat(node.extend(key, token, Duration.ofSeconds(60)).await(WAIT)).isTrue();
        assertThat(plain.pttl(key)).isGreaterThan(30_000L);
        plain.scriptFlush();
        assertThat(node.release(key, token).await(WAIT)).isTrue();
        assertThat(plain.exists(key)).isFalse();
        assertThat(node.release(key, token).await(WAIT)).as("cached again: EVALSHA").isFalse();
      }
      assertAllConnectionsReturned(node);
    }

    @Test
    @DisplayName("fenced acquire and fence write-back still work after SCRIPT FLUSH")
    void noscriptFallbackFencing() throws InterruptedException {
      RedisLockNode node = node();
      String key = key();
      String token = token();
      try (Jedis plain = SharedRedis.plainClient()) {
        plain.scriptFlush();
        long fence = node.tryAcquireFenced(key, token, TTL).await(WAIT).fence();
        assertThat(fence).isPositive();
        assertThat(plain.get(key)).isEqualTo(token);
        plain.scriptFlush();
        assertThat(node.raiseFence(key, token, fence + 1_000).await(WAIT)).isTrue();
        assertThat(node.release(key, token).await(WAIT)).isTrue();
        long next = node.tryAcquireFenced(key, token + "-2", TTL).await(WAIT).fence();
        assertThat(next).isGreaterThan(fence + 1_000);
        assertThat(node.release(key, token + "-2").await(WAIT)).isTrue();
      }
      assertAllConnectionsReturned(node);
    }
  }

  @Nested
  @DisplayName("multiplexing")
  class Multiplexing {

    @Test
    @DisplayName("one thread can start many calls before reading any reply")
    void manyCallsInFlight() throws InterruptedException {
      // more calls in flight than connections would make a call wait for a connection that only
      // this thread's later reads give back (the CI run of 0bddbb4 hit it): 12 calls, 16
      // connections
      RedisLockNode node = node(SharedRedis.server().uri() + "?poolSize=16");
      List<String> keys = new ArrayList<>();
      List<Reply<AcquireResult>> replies = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        String key = key();
        keys.add(key);
        replies.add(node.tryAcquire(key, "t" + i, TTL));
      }
      for (Reply<AcquireResult> reply : replies) {
        assertThat(reply.await(WAIT)).isEqualTo(AcquireResult.ACQUIRED);
      }
      List<Reply<Boolean>> releases = new ArrayList<>();
      for (int i = 0; i < keys.size(); i++) {
        releases.add(node.release(keys.get(i), "t" + i));
      }
      for (Reply<Boolean> reply : releases) {
        assertThat(reply.await(WAIT)).isTrue();
      }
      assertAllConnectionsReturned(node);
    }

    @Test
    @DisplayName("a paused server makes await time out in bounds; abandon closes the connection")
    void pausedServerLateAnswer() throws Exception {
      try (RedisServer redis = RedisServer.builder().faultInjection().start()) {
        RedisLockNode node = node(redis.uri());
        // warm a connection so the call goes out on an open socket
        assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();
        String key = key();
        String token = token();
        redis.pause();
        Reply<AcquireResult> reply;
        long started = System.nanoTime();
        try {
          reply = node.tryAcquire(key, token, TTL);
          long startMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
          assertThat(startMillis)
              .as("starting a call does not wait for the server")
              .isLessThan(1_500);
          long awaitStart = System.nanoTime();
          assertThatThrownBy(() -> reply.await(Duration.ofMillis(200)))
              .isInstanceOf(NodeTimeoutException.class)
              .hasMessageContaining(node.name());
          long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - awaitStart);
          assertThat(waited).isBetween(150L, 3_000L);
          // a second await does not wait again: the reply was given up
          assertThatThrownBy(() -> reply.await(Duration.ofMillis(50)))
              .isInstanceOf(NodeTimeoutException.class);
        } finally {
          redis.resume();
        }
        CompletableFuture<AcquireResult> late = new CompletableFuture<>();
        reply.abandon(late::complete);
        assertThat(late.get(10, TimeUnit.SECONDS))
            .as("an abandoned reply is not read: its connection is closed")
            .isNull();
        assertAllConnectionsReturned(node);
        assertThatThrownBy(() -> reply.await(WAIT)).isInstanceOf(IllegalStateException.class);
        assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired())
            .as("the node works again with a fresh connection")
            .isTrue();
      }
    }
  }

  @Nested
  @DisplayName("failures")
  class Failures {

    @Test
    @DisplayName(
        "a wrong password is a non-transient failure that names the node, never the password")
    void wrongPassword() throws InterruptedException {
      try (RedisServer redis = RedisServer.builder().password("right-Pa55").start()) {
        RedisLockNode good = node(redis.uri());
        assertThat(good.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();

        String secret = "wr0ng-S3cret";
        RedisLockNode bad =
            node("redis://:" + secret + "@127.0.0.1:" + redis.port() + "?connectTimeout=2s");
        assertThat(bad.name()).doesNotContain(secret);
        assertThat(bad.toString()).doesNotContain(secret);
        assertThatThrownBy(() -> bad.tryAcquire(key(), token(), TTL).await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining(bad.name())
            .hasMessageContaining("password")
            .satisfies(e -> assertThat(stackTraceOf(e)).doesNotContain(secret));
        assertAllConnectionsReturned(bad);

        RedisLockNode none = node("redis://127.0.0.1:" + redis.port());
        assertThatThrownBy(() -> none.release(key(), token()).await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("requires a password");
      }
    }

    @Test
    @DisplayName(
        "an ACL user without permission to run scripts gets a non-transient NOPERM failure")
    void aclPermission() {
      RedisServer redis = SharedRedis.server();
      String user = "redlock-test-" + UUID.randomUUID().toString().substring(0, 8);
      try (Jedis admin = SharedRedis.plainClient()) {
        admin.aclSetUser(user, "on", ">pw-" + user, "~*", "+set", "+get");
        RedisLockNode node = node("redis://" + user + ":pw-" + user + "@127.0.0.1:" + redis.port());
        String key = key();
        assertThat(node.tryAcquire(key, "t", TTL).await(WAIT).acquired()).isTrue();
        assertThatThrownBy(() -> node.release(key, "t").await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("NOPERM")
            .hasMessageContaining("ACL SETUSER")
            .satisfies(e -> assertThat(stackTraceOf(e)).doesNotContain("pw-" + user));
      } finally {
        try (Jedis admin = SharedRedis.plainClient()) {
          admin.aclDelUser(user);
        }
      }
    }

    @Test
    @DisplayName("a database index the server does not have is a non-transient failure")
    void badDatabase() throws InterruptedException {
      RedisLockNode node = node(SharedRedis.server().uri() + "/99");
      assertThatThrownBy(() -> node.tryAcquire(key(), token(), TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("database 99");
      assertAllConnectionsReturned(node);
    }

    @Test
    @DisplayName(
        "a key holding another type is a non-transient failure and the connection survives")
    void wrongType() throws InterruptedException {
      RedisLockNode node = node();
      String key = key();
      try (Jedis plain = SharedRedis.plainClient()) {
        plain.hset(key, "f", "v");
      }
      assertThat(node.tryAcquire(key, token(), TTL).await(WAIT))
          .as("SET NX on an existing key of any type: held")
          .isEqualTo(AcquireResult.HELD);
      assertThatThrownBy(() -> node.release(key, token()).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("keyPrefix");
      assertAllConnectionsReturned(node);
      assertThat(node.idleConnections()).isPositive();
    }

    @Test
    @DisplayName("a port where nothing listens gives a transient 'connection refused' in bounds")
    void unreachable() throws InterruptedException {
      RedisLockNode node = node("redis://127.0.0.1:" + FreePorts.find());
      long started = System.nanoTime();
      assertThatThrownBy(() -> node.tryAcquire(key(), token(), TTL).await(WAIT))
          .isInstanceOf(RedlockTransientException.class)
          .hasMessageContaining(node.name())
          .hasMessageContaining("connection refused");
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(5_000);
      assertAllConnectionsReturned(node);
    }

    @Test
    @DisplayName("after a server restart, at most one call fails and the node recovers")
    void recoversAfterRestart() throws InterruptedException {
      try (RedisServer redis = RedisServer.builder().faultInjection().start()) {
        RedisLockNode node = node(redis.uri());
        List<Reply<AcquireResult>> warm = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          warm.add(node.tryAcquire(key(), token(), TTL));
        }
        for (Reply<AcquireResult> reply : warm) {
          assertThat(reply.await(WAIT).acquired()).isTrue();
        }
        redis.kill();
        assertThatThrownBy(() -> node.tryAcquire(key(), token(), TTL).await(WAIT))
            .isInstanceOf(RedlockTransientException.class);
        redis.restart();
        int failures = 0;
        for (int i = 0; i < 3; i++) {
          try {
            assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();
          } catch (RedlockTransientException e) {
            failures++;
          }
        }
        assertThat(failures).isLessThanOrEqualTo(1);
        assertAllConnectionsReturned(node);
      }
    }

    @Test
    @DisplayName(
        "abandoning a call a paused server did not answer returns at once: the pool's replacement"
            + " connection (connect, INFO) is not opened on the caller's thread")
    void abandonOnPausedServerDoesNotBlock() throws Exception {
      try (RedisServer redis = RedisServer.builder().faultInjection().start()) {
        RedisLockNode node = node(redis.uri() + "?socketTimeout=3s");
        node.status().await(WAIT); // from now on every new connection reads INFO, as in an engine
        String key = key();
        String token = token();
        assertThat(node.tryAcquire(key, token, TTL).await(WAIT).acquired()).isTrue();
        redis.pause();
        try {
          Reply<Boolean> reply = node.extend(key, token, TTL);
          assertThatThrownBy(() -> reply.await(Duration.ofMillis(100)))
              .isInstanceOf(NodeTimeoutException.class);
          long started = System.nanoTime();
          reply.abandon(late -> {});
          assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
              .as("abandon does not wait for the paused server")
              .isLessThan(1_000);
        } finally {
          redis.resume();
        }
      }
    }

    @Test
    @DisplayName(
        "when every pooled connection stays busy, a call fails or times out waiting, naming"
            + " poolSize, and is never sent")
    void poolExhausted() throws Exception {
      try (RedisServer redis = RedisServer.builder().faultInjection().start()) {
        RedisLockNode node = node(redis.uri() + "?poolSize=1&connectTimeout=200ms");
        assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();
        redis.pause();
        Reply<AcquireResult> first;
        try {
          first = node.tryAcquire(key(), token(), TTL); // takes the only connection
          Reply<AcquireResult> second = node.tryAcquire(key(), token(), TTL);
          assertThatThrownBy(() -> second.await(Duration.ofMillis(300)))
              .isInstanceOf(RedlockTransientException.class)
              .hasMessageContaining("poolSize");
          CompletableFuture<AcquireResult> ended = new CompletableFuture<>();
          second.abandon(ended::complete);
          assertThat(ended.get(5, TimeUnit.SECONDS)).as("dropped, never sent").isNull();
        } finally {
          redis.resume();
        }
        assertThat(first.await(WAIT).acquired()).isTrue();
        assertAllConnectionsReturned(node);
      }
    }

    @Test
    @DisplayName("a server busy running a script gives a transient BUSY failure")
    void busyServer() throws Exception {
      try (RedisServer redis = RedisServer.builder().extraArgs("--lua-time-limit", "100").start()) {
        RedisLockNode node = node(redis.uri());
        assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();
        Thread looping =
            new Thread(
                () -> {
                  try (Jedis plain = SharedRedis.plainClient(redis, 0)) {
                    plain.eval("while true do end");
                  } catch (RuntimeException killed) {
                    // SCRIPT KILL ends it with an error
                  }
                });
        looping.start();
        try {
          Thread.sleep(400); // past lua-time-limit: the server now answers BUSY
          assertThatThrownBy(() -> node.tryAcquire(key(), token(), TTL).await(WAIT))
              .isInstanceOf(RedlockTransientException.class)
              .hasMessageContaining("busy running a script");
        } finally {
          assertThat(redis.command("SCRIPT", "KILL")).isEqualTo("+OK");
          looping.join(10_000);
        }
        assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();
        assertAllConnectionsReturned(node);
      }
    }

    @Test
    @DisplayName("a read-only replica gives a non-transient failure that asks for the primary")
    void readOnlyReplica() {
      RedisServer primary = SharedRedis.server();
      try (RedisServer replica =
          RedisServer.builder()
              .extraArgs("--replicaof", primary.host(), Integer.toString(primary.port()))
              .start()) {
        RedisLockNode node = node(replica.uri());
        assertThatThrownBy(() -> node.tryAcquire(key(), token(), TTL).await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("read-only replica")
            .hasMessageContaining("primary");
      }
    }

    @Test
    @DisplayName("calls after close throw IllegalStateException; close is idempotent")
    void closed() {
      RedisLockNode node = node();
      node.close();
      node.close();
      assertThatThrownBy(() -> node.tryAcquire(key(), token(), TTL))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(node.name());
      assertThatThrownBy(() -> node.release(key(), token()))
          .isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> node.extend(key(), token(), TTL))
          .isInstanceOf(IllegalStateException.class);
    }
  }

  @Nested
  @DisplayName("configuration")
  class Configuration {

    @Test
    @DisplayName("an unknown URI option is rejected with the list of known options")
    void unknownOption() {
      assertThatThrownBy(() -> RedisLockNode.fromUri("redis://:hunter2@localhost:6379?poolsize=3"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("unknown option 'poolsize'")
          .hasMessageContaining("poolSize, socketTimeout, user, verifyHostname")
          .hasMessageNotContaining("hunter2");
    }

    @Test
    @DisplayName("URI parts and options are parsed; name and toString never show the password")
    void parsesUri() {
      RedisLockNode node =
          node(
              "rediss://app:p%40ss%2Bword@10.1.2.3:6390/4?connectTimeout=250ms&socketTimeout=PT3S"
                  + "&poolSize=3&keyPrefix=locks:&verifyHostname=false");
      assertThat(node.name()).isEqualTo("rediss://10.1.2.3:6390/4");
      assertThat(node.toString())
          .contains("user=app", "password=***", "connectTimeout=250ms", "socketTimeout=3000ms")
          .contains("poolSize=3", "keyPrefix='locks:'", "verifyHostname=false")
          .doesNotContain("p@ss", "p%40ss");
      assertThat(node.storedKey("k")).isEqualTo("locks:k");
    }

    @Test
    @DisplayName("bad values name the option and the accepted form")
    void badValues() {
      assertThatThrownBy(() -> RedisLockNode.fromUri("redis://localhost?poolSize=0"))
          .hasMessageContaining("poolSize must be in 1..");
      assertThatThrownBy(() -> RedisLockNode.fromUri("redis://localhost?connectTimeout=soon"))
          .hasMessageContaining("connectTimeout must be a duration");
      assertThatThrownBy(() -> RedisLockNode.fromUri("redis://localhost/x"))
          .hasMessageContaining("database");
      assertThatThrownBy(() -> RedisLockNode.fromUri("http://localhost:6379"))
          .hasMessageContaining("redis:// or rediss://");
      assertThatThrownBy(() -> RedisLockNode.fromUri("redis://s3cret@localhost"))
          .hasMessageContaining("redis://:password@host")
          .hasMessageNotContaining("s3cret");
      assertThatThrownBy(() -> RedisLockNode.fromUri("redis://:6379"))
          .hasMessageContaining("no host");
    }

    @Test
    @DisplayName("the provider is found by ServiceLoader for redis:// and rediss://")
    void provider() {
      LockNodeProvider provider =
          ServiceLoader.load(LockNodeProvider.class).stream()
              .map(ServiceLoader.Provider::get)
              .filter(p -> p.schemes().contains("redis"))
              .findFirst()
              .orElseThrow();
      assertThat(provider.schemes()).containsExactlyInAnyOrder("redis", "rediss");
      LockNode node = provider.open(NodeUri.parse(SharedRedis.server().uri()));
      nodes.add(node);
      String key = key();
      assertThat(node.tryAcquire(key, "t", TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release(key, "t").await(WAIT)).isTrue();
    }
  }

  private static String stackTraceOf(Throwable e) {
    java.io.StringWriter out = new java.io.StringWriter();
    e.printStackTrace(new java.io.PrintWriter(out));
    return out.toString();
  }
}
