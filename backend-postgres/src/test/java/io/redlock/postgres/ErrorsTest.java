package io.redlock.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.testservers.PostgresServer;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Failures say what they are (transient or not), what to do, and never show the password. */
@DisplayName("Errors")
class ErrorsTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static String token() {
    return UUID.randomUUID().toString();
  }

  @Nested
  @DisplayName("from the server")
  class FromTheServer {
    @Test
    @DisplayName("a wrong password is not transient and the message does not show it")
    void wrongPassword() {
      String secret = "wrong-Secret-pw-" + UUID.randomUUID();
      String uri =
          TestServers.uri(TestServers.plain(), PostgresServer.USER, secret, "sslmode=disable");
      try (PostgresLockNode node = PostgresLockNode.fromUri(uri)) {
        assertThat(node.name()).doesNotContain(secret);
        assertThat(node.toString()).doesNotContain(secret);
        for (int i = 0; i < 2; i++) { // the second fails at once, with the same error
          assertThatThrownBy(() -> node.tryAcquire("k", token(), TTL).await(WAIT))
              .isInstanceOf(RedlockNonTransientException.class)
              .hasMessageContaining("authentication failed")
              .hasMessageContaining("28P01")
              .hasMessageContaining(node.name())
              .hasMessageNotContaining(secret)
              .satisfies(e -> assertThat(String.valueOf(e.getCause())).doesNotContain(secret));
        }
      }
    }

    @Test
    @DisplayName("a missing table without createTable is not transient and shows the DDL")
    void missingTable() {
      String table = TestServers.uniqueTable("missing");
      try (PostgresLockNode node =
          PostgresLockNode.fromUri(
              TestServers.uri(TestServers.plain()) + "&redlock.table=" + table)) {
        assertThatThrownBy(() -> node.tryAcquire("k", token(), TTL).await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("table " + table + " does not exist")
            .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + table)
            .hasMessageContaining("redlock.createTable=true")
            .hasMessageNotContaining(PostgresServer.PASSWORD);
        assertThat(node.createTableSql()).contains("CREATE TABLE IF NOT EXISTS " + table);
        // created by someone else meanwhile: the node notices at its next call
        TestServers.execute(TestServers.plain().jdbcUrl(), node.createTableSql());
        String t = token();
        assertThat(node.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
        assertThat(node.release("k", t).await(WAIT)).isTrue();
      }
    }

    @Test
    @DisplayName("a table dropped behind the node's back is created again when allowed")
    void droppedTableIsCreatedAgain() {
      String table = TestServers.uniqueTable("dropped");
      try (PostgresLockNode node =
          PostgresLockNode.fromUri(
              TestServers.uri(TestServers.plain())
                  + "&redlock.createTable=true&redlock.table="
                  + table)) {
        String t = token();
        assertThat(node.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
        TestServers.execute(TestServers.plain().jdbcUrl(), "DROP TABLE " + table);
        assertThatThrownBy(() -> node.tryAcquire("k", token(), TTL).await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class);
        assertThat(node.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
      }
    }

    @Test
    @DisplayName(
        "a table of an earlier version without the counter column: plain locks work,"
            + " fencing says how to add it")
    void tableWithoutFenceColumn() {
      String table = TestServers.uniqueTable("nofence");
      TestServers.execute(
          TestServers.plain().jdbcUrl(),
          "CREATE TABLE "
              + table
              + " (key_hash BYTEA NOT NULL PRIMARY KEY, lock_key TEXT NOT NULL,"
              + " token BYTEA NOT NULL, expires_at TIMESTAMPTZ NOT NULL)");
      String uri = TestServers.uri(TestServers.plain()) + "&redlock.table=" + table;
      try (PostgresLockNode node = PostgresLockNode.fromUri(uri)) {
        String t = token();
        assertThat(node.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
        assertThat(node.release("k", t).await(WAIT)).isTrue();
        assertThatThrownBy(() -> node.tryAcquireFenced("f", token(), TTL).await(WAIT))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("ALTER TABLE " + table + " ADD COLUMN fence");
      }
      try (PostgresLockNode node = PostgresLockNode.fromUri(uri + "&redlock.createTable=true")) {
        assertThat(node.tryAcquireFenced("f", token(), TTL).await(WAIT).fence()).isPositive();
      }
    }
  }

  @Nested
  @DisplayName("without a server")
  class WithoutAServer {
    @Test
    @DisplayName("a server that is down is a transient failure, in bounded time")
    void serverDown() {
      String uri =
          "postgresql://postgres:"
              + PostgresServer.PASSWORD
              + "@127.0.0.1:"
              + TestServers.closedPort()
              + "/postgres?sslmode=disable";
      try (PostgresLockNode node = PostgresLockNode.fromUri(uri)) {
        long started = System.nanoTime();
        for (int i = 0; i < 3; i++) {
          assertThatThrownBy(() -> node.tryAcquire("k", token(), TTL).await(WAIT))
              .isInstanceOf(RedlockTransientException.class)
              .isNotInstanceOf(RedlockNonTransientException.class)
              .hasMessageContaining("cannot connect")
              .hasMessageContaining(node.name())
              .hasMessageNotContaining(PostgresServer.PASSWORD);
        }
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(WAIT);
      }
    }

    @Test
    @DisplayName("a server that stopped while the node ran: transient, then used again")
    void serverStoppedAndRestarted() {
      try (PostgresServer server = PostgresServer.startLocal();
          PostgresLockNode node =
              PostgresLockNode.fromUri(TestServers.uri(server) + "&redlock.createTable=true")) {
        String t = token();
        assertThat(node.tryAcquire("k", t, TTL).await(WAIT).acquired()).isTrue();
        server.stop();
        assertThatThrownBy(() -> node.release("k", t).await(WAIT))
            .isInstanceOf(RedlockTransientException.class)
            .isNotInstanceOf(RedlockNonTransientException.class);
        server.restart();
        assertThat(node.release("k", t).await(WAIT)).isTrue();
      }
    }
  }

  @Nested
  @DisplayName("in the URI")
  class InTheUri {
    private static final String BASE = "postgresql://u:s3cret-pw@127.0.0.1:5432/db";

    @Test
    @DisplayName("an unknown redlock. option is named, with the known ones")
    void unknownOption() {
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?redlock.tabel=x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'redlock.tabel'")
          .hasMessageContaining("redlock.table")
          .hasMessageContaining("redlock.poolSize")
          .hasMessageNotContaining("s3cret-pw");
    }

    @Test
    @DisplayName("an unknown parameter is named, never ignored")
    void unknownParameter() {
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?sslmode=require&sslfactory=x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'sslfactory'")
          .hasMessageContaining("sslrootcert")
          .hasMessageNotContaining("s3cret-pw");
    }

    @Test
    @DisplayName("bad values name the option")
    void badValues() {
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?redlock.poolSize=0"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.poolSize");
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?redlock.queryTimeout=soon"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.queryTimeout");
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?redlock.createTable=maybe"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.createTable");
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?redlock.table=1-bad"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid table name");
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?sslmode=sometimes"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageNotContaining("s3cret-pw");
      assertThatThrownBy(() -> PostgresLockNode.fromUri(BASE + "?sslrootcert=/nonexistent.pem"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("sslrootcert");
    }

    @Test
    @DisplayName("a malformed URI or another scheme is refused without showing the password")
    void malformed() {
      assertThatThrownBy(() -> PostgresLockNode.fromUri("postgresql://u:s3cret-pw@h:99999/db"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageNotContaining("s3cret-pw")
          .satisfies(e -> assertThat(e.getCause()).isNull());
      assertThatThrownBy(() -> PostgresLockNode.fromUri("mysql://u:s3cret-pw@h/db"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("postgresql://")
          .hasMessageNotContaining("s3cret-pw");
      assertThatThrownBy(() -> PostgresLockNode.fromUri("postgresql://u:s3cret-pw@a,b/db"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("several hosts");
    }

    @Test
    @DisplayName("names hold no secret; libpq's defaults apply")
    void names() {
      try (PostgresLockNode node =
          PostgresLockNode.fromUri(BASE + "?redlock.table=locks&application_name=x")) {
        assertThat(node.name())
            .isEqualTo("postgresql://u@127.0.0.1:5432/db?redlock.table=locks")
            .isEqualTo(node.toString());
      }
      try (PostgresLockNode node = PostgresLockNode.fromUri("postgres://dbhost")) {
        String user = System.getProperty("user.name");
        assertThat(node.name()).isEqualTo("postgresql://" + user + "@dbhost:5432/" + user);
      }
    }

    @Test
    @DisplayName("the provider opens postgresql:// and postgres:// URIs through ServiceLoader")
    void provider() {
      LockNodes nodes = LockNodes.discover();
      try (LockNode node = nodes.open(BASE);
          LockNode other = nodes.open("postgres://u@127.0.0.1/db")) {
        assertThat(node).isInstanceOf(PostgresLockNode.class);
        assertThat(other).isInstanceOf(PostgresLockNode.class);
        assertThat(node.name()).doesNotContain("s3cret-pw");
      }
    }
  }
}
