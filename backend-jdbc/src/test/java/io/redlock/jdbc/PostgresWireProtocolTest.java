package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.Reply;
import io.redlock.testservers.PostgresServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Nodes with {@code redlock.wireProtocol=true} on real PostgreSQL servers, beyond the kit: they
 * share a table with JDBC nodes, survive the table being dropped, give up on a frozen server and
 * still deliver its late answer, keep many calls in flight, and refuse what they cannot honour. And
 * the default ({@code auto}): the calls move to the wire protocol once it has connected, and stay
 * on JDBC where it cannot.
 */
class PostgresWireProtocolTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(5);

  private static String url() {
    return TestDatabases.postgres().jdbcUrl();
  }

  private static JdbcLockNode wireNode(String url, String table) {
    return wireNode(url, table, 4);
  }

  private static JdbcLockNode wireNode(String url, String table, int poolSize) {
    return JdbcLockNode.builder(url)
        .table(table)
        .createTable(true)
        .wireProtocol(true)
        .poolSize(poolSize)
        .build();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  @Test
  void sharesItsTableWithJdbcNodes() {
    String table = TestDatabases.uniqueTable("wire_interop");
    try (JdbcLockNode wire = wireNode(url(), table);
        JdbcLockNode jdbc =
            JdbcLockNode.builder(url())
                .table(table)
                .createTable(true)
                .wireProtocol(false)
                .build()) {
      assertThat(jdbc.wireTakesCalls()).isFalse();
      String key = "interop";
      String a = token();
      String b = token();
      assertThat(wire.tryAcquire(key, a, TTL).await(WAIT).acquired()).isTrue();
      assertThat(jdbc.tryAcquire(key, b, TTL).await(WAIT).acquired()).isFalse();
      assertThat(jdbc.release(key, b).await(WAIT)).isFalse();
      assertThat(jdbc.extend(key, a, TTL).await(WAIT)).isTrue();
      assertThat(wire.release(key, a).await(WAIT)).isTrue();
      assertThat(jdbc.tryAcquire(key, b, TTL).await(WAIT).acquired()).isTrue();
      assertThat(wire.tryAcquire(key, a, TTL).await(WAIT).acquired()).isFalse();
      assertThat(wire.extend(key, a, TTL).await(WAIT)).isFalse();
      assertThat(wire.extend(key, b, TTL).await(WAIT)).isTrue();
      assertThat(wire.release(key, b).await(WAIT)).isTrue();

      // a key with a fencing counter (taken over JDBC): a release over the wire keeps its row,
      // so the next counter is larger still
      String fenced = "interop-fenced";
      long first = jdbc.tryAcquireFenced(fenced, a, TTL).await(WAIT).fence();
      assertThat(wire.release(fenced, a).await(WAIT)).isTrue();
      assertThat(wire.tryAcquire(fenced, b, TTL).await(WAIT).acquired()).isTrue();
      assertThat(wire.release(fenced, b).await(WAIT)).isTrue();
      assertThat(jdbc.tryAcquireFenced(fenced, a, TTL).await(WAIT).fence()).isGreaterThan(first);
      assertThat(jdbc.release(fenced, a).await(WAIT)).isTrue();
    }
  }

  @Test
  void withoutPreparedStatementsEveryCallParsesAnew() {
    // as a URL for a transaction-pooling proxy says it: prepareThreshold=0
    String table = TestDatabases.uniqueTable("wire_unnamed");
    try (JdbcLockNode wire = wireNode(url() + "&prepareThreshold=0", table);
        JdbcLockNode jdbc =
            JdbcLockNode.builder(url())
                .table(table)
                .createTable(true)
                .wireProtocol(false)
                .build()) {
      for (int i = 0; i < 3; i++) {
        String t = token();
        assertThat(wire.tryAcquire("unnamed", t, TTL).await(WAIT).acquired()).isTrue();
        assertThat(jdbc.tryAcquire("unnamed", token(), TTL).await(WAIT).acquired()).isFalse();
        assertThat(wire.extend("unnamed", t, TTL).await(WAIT)).isTrue();
        assertThat(wire.release("unnamed", t).await(WAIT)).isTrue();
      }
    }
  }

  @Test
  void anInterruptedAwaitLeavesTheCallToAbandonWhichDropsItUnsent() throws Exception {
    String table = TestDatabases.uniqueTable("wire_interrupt");
    try (JdbcLockNode wire = wireNode(url(), table, 1)) {
      String warm = token();
      assertThat(wire.tryAcquire("warm", warm, TTL).await(WAIT).acquired()).isTrue();
      assertThat(wire.release("warm", warm).await(WAIT)).isTrue();
      // the one connection is lent to a first call; a second call waits on a worker for it
      String a = token();
      String b = token();
      Reply<AcquireResult> first = wire.tryAcquire("interrupt-a", a, TTL);
      Reply<AcquireResult> second = wire.tryAcquire("interrupt-b", b, TTL);
      Thread me = Thread.currentThread();
      java.util.concurrent.ScheduledExecutorService timer =
          java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
      try {
        timer.schedule(me::interrupt, 200, TimeUnit.MILLISECONDS);
        assertThatThrownBy(() -> second.await(WAIT))
            .isInstanceOf(io.redlock.RedlockTransientException.class)
            .hasMessageContaining("interrupted");
      } finally {
        timer.shutdownNow();
        Thread.interrupted(); // clear the flag for what follows
      }
      CompletableFuture<AcquireResult> late = new CompletableFuture<>();
      second.abandon(late::complete);
      assertThat(first.await(WAIT).acquired()).isTrue(); // gives the connection back
      assertThat(late.get(10, TimeUnit.SECONDS))
          .as("the abandoned call was still waiting for a connection: dropped, never sent")
          .isNull();
      // the connection went to the next calls, not to the dropped one
      assertThat(wire.release("interrupt-a", a).await(WAIT)).isTrue();
      assertThat(wire.release("interrupt-b", b).await(WAIT)).isFalse();
      assertThat(wire.wireConnections()).isEqualTo(1);
    }
  }

  @Test
  void aTableDroppedBehindItsBackIsReportedThenCreatedAgain() {
    String table = TestDatabases.uniqueTable("wire_dropped");
    try (JdbcLockNode wire = wireNode(url(), table)) {
      String t = token();
      assertThat(wire.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
      TestDatabases.execute(url(), "DROP TABLE " + table);
      assertThatThrownBy(() -> wire.tryAcquire("k", t, TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("does not exist")
          .hasMessageContaining("CREATE TABLE");
      // the node may create tables: the next call checks the table again and creates it
      assertThat(wire.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
      assertThat(wire.release("k", t).await(WAIT)).isTrue();
    }
  }

  @Test
  void aMissingTableTheNodeMayNotCreatePrintsTheDdl() {
    String table = TestDatabases.uniqueTable("wire_missing");
    try (JdbcLockNode wire = JdbcLockNode.builder(url()).table(table).wireProtocol(true).build()) {
      assertThatThrownBy(() -> wire.tryAcquire("k", token(), TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("table " + table + " does not exist")
          .hasMessageContaining("redlock.createTable=true");
    }
  }

  @Test
  void keepsCallsInFlightFromOneThreadAndManyThreadsAtOnce() throws Exception {
    String table = TestDatabases.uniqueTable("wire_inflight");
    try (JdbcLockNode wire = wireNode(url(), table, 3)) {
      // as many calls in flight from one thread as the pool has connections (the engine has one
      // per node per thread)
      List<String> tokens = new ArrayList<>();
      List<Reply<AcquireResult>> replies = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        tokens.add(token());
        replies.add(wire.tryAcquire("inflight-" + i, tokens.get(i), TTL));
      }
      for (Reply<AcquireResult> r : replies) {
        assertThat(r.await(WAIT).acquired()).isTrue();
      }
      List<Reply<Boolean>> releases = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        releases.add(wire.release("inflight-" + i, tokens.get(i)));
      }
      for (Reply<Boolean> r : releases) {
        assertThat(r.await(WAIT)).isTrue();
      }
      // more threads than connections: calls wait for a connection to come back
      java.util.concurrent.ExecutorService threads =
          java.util.concurrent.Executors.newFixedThreadPool(12);
      try {
        List<java.util.concurrent.Future<Integer>> done = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
          String key = "threads-" + i;
          done.add(
              threads.submit(
                  () -> {
                    int cycles = 0;
                    for (int c = 0; c < 25; c++) {
                      String t = token();
                      if (wire.tryAcquire(key, t, TTL).await(WAIT).acquired()
                          && wire.release(key, t).await(WAIT)) {
                        cycles++;
                      }
                    }
                    return cycles;
                  }));
        }
        for (java.util.concurrent.Future<Integer> f : done) {
          assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(25);
        }
      } finally {
        threads.shutdownNow();
      }
      assertThat(wire.wireConnections()).isBetween(1, 3);
    }
  }

  @ParameterizedTest(name = "TLS: {0}")
  @ValueSource(booleans = {false, true})
  void aFrozenServerTimesOutAndItsLateAnswerIsDelivered(boolean tls) throws Exception {
    String table = TestDatabases.uniqueTable("wire_frozen");
    try (PostgresServer server =
            tls ? PostgresServer.startLocalWithTls() : PostgresServer.startLocal();
        JdbcLockNode wire =
            wireNode(server.jdbcUrl() + (tls ? "&sslmode=require" : "&sslmode=disable"), table)) {
      String warm = token();
      assertThat(wire.tryAcquire("warm", warm, TTL).await(WAIT).acquired()).isTrue();
      assertThat(wire.release("warm", warm).await(WAIT)).isTrue();
      int opened = wire.wireConnections(); // one or two: the one opened at start, maybe one more

      String t = token();
      server.pause();
      Reply<AcquireResult> reply;
      try {
        reply = wire.tryAcquire("frozen", t, TTL);
        Reply<AcquireResult> r = reply;
        assertThatThrownBy(() -> r.await(Duration.ofMillis(300)))
            .isInstanceOf(NodeTimeoutException.class);
      } finally {
        server.resume();
      }
      CompletableFuture<AcquireResult> late = new CompletableFuture<>();
      reply.abandon(late::complete);
      assertThat(late.get(10, TimeUnit.SECONDS).acquired())
          .as("the late answer: the key was set after all")
          .isTrue();
      // the connection went back to the pool after the late answer, and serves the next call
      assertThat(wire.release("frozen", t).await(WAIT)).isTrue();
      assertThat(wire.wireConnections()).as("connections opened").isEqualTo(opened);
    }
  }

  @Test
  void refusesWhatItCannotHonour() {
    String base = url() + "&redlock.wireProtocol=true";
    assertThatThrownBy(() -> JdbcLockNode.builder(base + "&sslcert=/tmp/client.crt").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[sslcert]")
        .hasMessageContaining("set redlock.wireProtocol=auto (the default) or false");
    assertThatThrownBy(() -> JdbcLockNode.builder(base + "&channelBinding=require").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("channelBinding=require");
    assertThatThrownBy(
            () ->
                JdbcLockNode.builder(
                        "jdbc:postgresql://127.0.0.1:1,127.0.0.1:2/postgres?redlock.wireProtocol=true")
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("several hosts");
    assertThatThrownBy(
            () ->
                JdbcLockNode.builder("jdbc:h2:mem:wire;DB_CLOSE_DELAY=-1")
                    .wireProtocol(true)
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PostgreSQL");
    assertThatThrownBy(() -> JdbcLockNode.builder(url() + "&redlock.wireProtocol=maybe"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("redlock.wireProtocol must be true, false or auto");
    org.h2.jdbcx.JdbcDataSource dataSource = new org.h2.jdbcx.JdbcDataSource();
    dataSource.setURL("jdbc:h2:mem:wire-ds;DB_CLOSE_DELAY=-1");
    assertThatThrownBy(() -> JdbcLockNode.builder(dataSource).wireProtocol(true).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("DataSource");
  }

  /** Asks {@code condition} every 10 ms until it holds, for at most 15 s; its last answer. */
  private static boolean eventually(java.util.function.BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!condition.getAsBoolean() && System.nanoTime() - deadline < 0) {
      Thread.sleep(10);
    }
    return condition.getAsBoolean();
  }

  /** Waits (at most 15 s) until the node's lock calls go over the wire protocol. */
  private static boolean awaitWire(JdbcLockNode node) throws InterruptedException {
    return eventually(node::wireTakesCalls);
  }

  /** Statements on {@code table} that the wire transport's sessions ran last. */
  private static int wireSessionsThatRan(String table) {
    return Integer.parseInt(
        TestDatabases.queryOne(
            url(),
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'redlock'"
                + " AND query LIKE '%"
                + table
                + "%'"));
  }

  @Test
  void byDefaultTheCallsMoveToTheWireProtocolOnceItHasConnected() throws Exception {
    String table = TestDatabases.uniqueTable("wire_auto");
    try (JdbcLockNode node = JdbcLockNode.builder(url()).table(table).createTable(true).build()) {
      // from the first call on, over JDBC until the transport's first connection has opened
      String a = token();
      assertThat(node.tryAcquire("auto", a, TTL).await(WAIT).acquired()).isTrue();
      assertThat(awaitWire(node)).isTrue();
      assertThat(node.wireConnections()).isPositive();
      assertThat(node.extend("auto", a, TTL).await(WAIT)).isTrue();
      assertThat(node.tryAcquire("auto", token(), TTL).await(WAIT).acquired()).isFalse();
      assertThat(wireSessionsThatRan(table)).isPositive();
      assertThat(node.release("auto", a).await(WAIT)).isTrue();
    }
  }

  @Test
  void byDefaultAUrlTheWireProtocolCannotHonourStaysOnJdbc() {
    String table = TestDatabases.uniqueTable("wire_auto_refused");
    // a driver option the transport cannot honour: no failure, the node simply uses JDBC (auto is
    // the default, and may be said)
    try (JdbcLockNode node =
        JdbcLockNode.builder(
                url()
                    + "&sslcert=/nonexistent/client.crt&sslmode=disable&redlock.wireProtocol=auto")
            .table(table)
            .createTable(true)
            .build()) {
      assertThat(node.wireTakesCalls()).isFalse();
      assertThat(node.wireConnections()).isZero();
      String a = token();
      assertThat(node.tryAcquire("refused", a, TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release("refused", a).await(WAIT)).isTrue();
      assertThat(node.wireTakesCalls()).isFalse();
      assertThat(wireSessionsThatRan(table)).isZero();
    }
  }

  @Test
  void byDefaultAWrongPasswordIsReportedByJdbcAndTheWireConnectsOnceItIsMended() throws Exception {
    String role = "wire_auto_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    String table = TestDatabases.uniqueTable("wire_auto_password");
    TestDatabases.execute(
        url(),
        "CREATE ROLE " + role + " LOGIN PASSWORD 'right-secret-pw'",
        "GRANT USAGE, CREATE ON SCHEMA public TO " + role);
    String wrong =
        url()
            .replace("user=" + PostgresServer.USER, "user=" + role)
            .replace(PostgresServer.PASSWORD, "wrong-secret-pw");
    try (JdbcLockNode node = JdbcLockNode.builder(wrong).table(table).createTable(true).build()) {
      // JDBC reports the wrong password, as without the wire protocol
      assertThatThrownBy(() -> node.tryAcquire("k", token(), TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("password")
          .hasMessageNotContaining("wrong-secret-pw");
      assertThat(node.wireTakesCalls()).isFalse();
      // a password can be mended while the node runs: the transport does not give up
      assertThat(node.wireGaveUp()).isNull();
      TestDatabases.execute(url(), "ALTER ROLE " + role + " PASSWORD 'wrong-secret-pw'");
      assertThat(awaitWire(node)).isTrue();
      String a = token();
      assertThat(node.tryAcquire("k", a, TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release("k", a).await(WAIT)).isTrue();
      assertThat(wireSessionsThatRan(table)).isPositive();
    } finally {
      TestDatabases.execute(url(), "DROP OWNED BY " + role, "DROP ROLE " + role);
    }
  }

  @Test
  void byDefaultAnAuthenticationMethodItDoesNotSpeakLeavesTheCallsOnJdbc() throws Exception {
    // a scripted server that asks every client for GSSAPI (authentication request 7)
    try (java.net.ServerSocket server =
        new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      server.setSoTimeout(20_000);
      Thread script =
          new Thread(
              () -> {
                for (int i = 0; i < 50 && !server.isClosed(); i++) {
                  try (java.net.Socket s = server.accept()) {
                    java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
                    in.readFully(new byte[in.readInt() - 4]); // the start-up message
                    java.io.DataOutputStream out =
                        new java.io.DataOutputStream(s.getOutputStream());
                    out.writeByte('R');
                    out.writeInt(8);
                    out.writeInt(7);
                    out.flush();
                  } catch (java.io.IOException e) {
                    // a client that went away, or the socket closed at the end
                  }
                }
              },
              "scripted-gssapi-server");
      script.setDaemon(true);
      script.start();
      String url =
          "jdbc:postgresql://127.0.0.1:"
              + server.getLocalPort()
              + "/postgres?user=u&password=p&sslmode=disable";
      try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
        // asking whether it takes calls is what starts the next attempt, as a call would
        eventually(() -> !node.wireTakesCalls() && node.wireGaveUp() != null);
        assertThat(node.wireGaveUp()).contains("authentication method 7");
        assertThat(node.wireTakesCalls()).isFalse();
      }
    }
  }

  @Test
  void byDefaultAServerDownAtFirstIsConnectedToOnceItIsUp() throws Exception {
    try (PostgresServer server = PostgresServer.startLocal()) {
      server.stop();
      String table = TestDatabases.uniqueTable("wire_auto_late");
      try (JdbcLockNode node =
          JdbcLockNode.builder(server.jdbcUrl()).table(table).createTable(true).build()) {
        assertThatThrownBy(() -> node.tryAcquire("late", token(), TTL).await(WAIT))
            .isNotInstanceOf(RedlockNonTransientException.class);
        assertThat(node.wireTakesCalls()).isFalse();
        server.restart();
        assertThat(awaitWire(node)).isTrue();
        String a = token();
        assertThat(node.tryAcquire("late", a, TTL).await(WAIT).acquired()).isTrue();
        assertThat(node.release("late", a).await(WAIT)).isTrue();
        assertThat(node.wireGaveUp()).isNull();
      }
    }
  }
}
