package io.redlock.mongo.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.mongodb.MongoCommandException;
import com.mongodb.MongoNodeIsRecoveringException;
import com.mongodb.MongoNotPrimaryException;
import com.mongodb.MongoWriteConcernException;
import com.mongodb.MongoWriteException;
import com.mongodb.ServerAddress;
import com.mongodb.WriteConcern;
import com.mongodb.WriteError;
import com.mongodb.bulk.WriteConcernError;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import org.bson.BsonDocument;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The translation of server answers that the stand-in cannot produce (it has no replica set, no
 * users and no write concern): each driver exception is built from a server reply in the shape
 * MongoDB sends it, so the table is checked even where no such server runs. Everything the stand-in
 * can produce (refused and silent connections, authentication failure, duplicate keys) is checked
 * over the wire in {@code MongoLockNodeTest} and the compatibility kit.
 */
@DisplayName("MongoErrors translates server replies the stand-in cannot send")
class MongoErrorsTest {
  private static final String NODE = "mongodb://app:***@db1:27017/?replicaSet=rs0";
  private static final ServerAddress ADDRESS = new ServerAddress("db1", 27017);
  // Never connected: the translation reads only the collection's namespace and write concern.
  private static final MongoClient CLIENT = MongoClients.create("mongodb://127.0.0.1:1");
  private static final MongoCollection<Document> LOCKS =
      CLIENT
          .getDatabase("redlock")
          .getCollection("locks")
          .withWriteConcern(WriteConcern.MAJORITY.withJournal(true));

  @AfterAll
  static void closeClient() {
    CLIENT.close();
  }

  private static RedlockException translate(RuntimeException e) {
    return MongoErrors.translate(e, NODE, "tryAcquire", LOCKS);
  }

  private static BsonDocument reply(int code, String name, String message) {
    return BsonDocument.parse(
        "{ok: 0, code: " + code + ", codeName: '" + name + "', errmsg: '" + message + "'}");
  }

  @Test
  @DisplayName("not writable primary (failover) is transient and suggests the seed list")
  void notPrimary() {
    RedlockException e =
        translate(
            new MongoNotPrimaryException(
                reply(10107, "NotWritablePrimary", "not primary"), ADDRESS));
    assertThat(e).isInstanceOf(RedlockTransientException.class);
    assertThat(e.getMessage()).startsWith(NODE + ": tryAcquire failed").contains("replicaSet");
    assertThat(e.node()).contains(NODE);
  }

  @Test
  @DisplayName("a node that is recovering or shutting down is transient")
  void recovering() {
    assertThat(
            translate(
                new MongoNodeIsRecoveringException(
                    reply(91, "ShutdownInProgress", "shutting down"), ADDRESS)))
        .isInstanceOf(RedlockTransientException.class);
    assertThat(
            translate(
                new MongoCommandException(
                    reply(189, "PrimarySteppedDown", "stepped down"), ADDRESS)))
        .isInstanceOf(RedlockTransientException.class);
  }

  @Test
  @DisplayName("a write concern timeout is transient and says the node does not count")
  void writeConcernTimeout() {
    RedlockException e =
        translate(
            new MongoWriteConcernException(
                new WriteConcernError(
                    64,
                    "WriteConcernFailed",
                    "waiting for replication timed out",
                    new BsonDocument()),
                ADDRESS));
    assertThat(e).isInstanceOf(RedlockTransientException.class);
    assertThat(e.getMessage()).contains("w: majority", "journal: true", "not confirmed");
  }

  @Test
  @DisplayName("a write concern the deployment cannot satisfy is non-transient")
  void unsatisfiableWriteConcern() {
    RedlockException e =
        translate(
            new MongoWriteConcernException(
                new WriteConcernError(
                    100,
                    "UnsatisfiableWriteConcern",
                    "Not enough data-bearing nodes",
                    new BsonDocument()),
                ADDRESS));
    assertThat(e).isInstanceOf(RedlockNonTransientException.class);
    assertThat(e.getMessage()).contains("cannot satisfy");
  }

  @Test
  @DisplayName("missing privileges are non-transient and name the role to grant")
  void unauthorized() {
    RedlockException e =
        translate(
            new MongoCommandException(
                reply(13, "Unauthorized", "not authorized on redlock to execute command"),
                ADDRESS));
    assertThat(e).isInstanceOf(RedlockNonTransientException.class);
    assertThat(e.getMessage()).contains("readWrite", "'redlock'");
  }

  @Test
  @DisplayName("a server without $$NOW (before 4.2) is non-transient and names the version")
  void tooOld() {
    RedlockException e =
        translate(
            new MongoWriteException(
                new WriteError(17276, "Use of undefined variable: NOW", new BsonDocument()),
                ADDRESS));
    assertThat(e).isInstanceOf(RedlockNonTransientException.class);
    assertThat(e.getMessage()).contains("4.2");
  }

  @Test
  @DisplayName("a duplicate _id is recognised as 'held', any other write error is not")
  void duplicateKey() {
    assertThat(
            MongoErrors.isDuplicateKey(
                new MongoWriteException(
                    new WriteError(11000, "E11000 duplicate key error", new BsonDocument()),
                    ADDRESS)))
        .isTrue();
    assertThat(
            MongoErrors.isDuplicateKey(
                new MongoWriteException(
                    new WriteError(121, "Document failed validation", new BsonDocument()),
                    ADDRESS)))
        .isFalse();
  }

  @Test
  @DisplayName("quoted driver messages are redacted")
  void quotesRedacted() {
    RedlockException e =
        translate(
            new MongoCommandException(
                reply(2, "BadValue", "bad uri mongodb://u:hunter2@h/?proxyPassword=pp9"), ADDRESS));
    assertThat(e.getMessage()).doesNotContain("hunter2", "pp9");
  }
}
