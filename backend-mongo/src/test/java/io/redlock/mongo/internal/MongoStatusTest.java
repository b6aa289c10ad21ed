package io.redlock.mongo.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.mongodb.WriteConcern;
import java.time.Duration;
import java.util.Date;
import org.bson.Document;
import org.bson.types.ObjectId;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The rules that turn a server's {@code hello} and {@code serverStatus} answers into a status, fed
 * with answers shaped like those of each kind of deployment (a test run has only the stand-in and,
 * at best, one real server, so the other kinds are shown here; the node's tests show the rules
 * applied to real answers).
 */
@DisplayName("MongoStatus rules")
class MongoStatusTest {
  private static final WriteConcern DEFAULT = WriteConcern.MAJORITY.withJournal(true);
  private static final WriteConcern MAJORITY = WriteConcern.MAJORITY;
  private static final WriteConcern W1 = WriteConcern.W1;
  private static final WriteConcern W1_JOURNALED = WriteConcern.W1.withJournal(true);

  private static Document standalone() {
    return new Document("isWritablePrimary", true).append("localTime", new Date());
  }

  private static Document replicaSet() {
    return standalone().append("setName", "rs0").append("me", "db1:27017");
  }

  private static Document mongos() {
    return standalone().append("msg", "isdbgrid");
  }

  private static Document serverStatus(String version, String engine, boolean persistent) {
    return new Document("version", version)
        .append("process", "mongod")
        .append("uptimeMillis", 123_456L)
        .append("storageEngine", new Document("name", engine).append("persistent", persistent));
  }

  private static boolean durable(
      Document hello, Document status, WriteConcern wc, Boolean majorityJournalDefault) {
    return MongoStatus.durability(hello, status, wc, majorityJournalDefault).durable();
  }

  @Nested
  @DisplayName("durability")
  class DurabilityRule {
    private final Document wiredTiger7 = serverStatus("7.0.12", "wiredTiger", true);

    @Test
    @DisplayName("the default write concern on a persistent engine is durable everywhere")
    void defaultIsDurable() {
      assertThat(durable(standalone(), wiredTiger7, DEFAULT, null)).isTrue();
      assertThat(durable(replicaSet(), wiredTiger7, DEFAULT, null)).isTrue();
      assertThat(durable(mongos(), null, DEFAULT, null)).isTrue();
    }

    @Test
    @DisplayName("journal=false is never durable")
    void journalFalse() {
      WriteConcern noJournal = WriteConcern.MAJORITY.withJournal(false);
      assertThat(durable(standalone(), wiredTiger7, noJournal, null)).isFalse();
      assertThat(durable(replicaSet(), wiredTiger7, noJournal, true)).isFalse();
      assertThat(durable(mongos(), null, noJournal, null)).isFalse();
    }

    @Test
    @DisplayName("an in-memory engine, no engine reported, or no serverStatus is not durable")
    void engineMustBePersistent() {
      assertThat(durable(standalone(), serverStatus("7.0.1", "inMemory", false), DEFAULT, null))
          .isFalse();
      assertThat(
              MongoStatus.durability(
                      standalone(),
                      new Document("version", "5.0.0").append("process", "java"),
                      DEFAULT,
                      null)
                  .reason())
          .contains("no storage engine");
      assertThat(MongoStatus.durability(replicaSet(), null, DEFAULT, null).reason())
          .contains("clusterMonitor");
    }

    @Test
    @DisplayName("standalone: journal=true, or w=majority on 6.1+, else not durable")
    void standaloneRule() {
      assertThat(durable(standalone(), wiredTiger7, W1_JOURNALED, null)).isTrue();
      assertThat(durable(standalone(), wiredTiger7, W1, null)).isFalse();
      assertThat(durable(standalone(), wiredTiger7, MAJORITY, null)).isTrue();
      assertThat(durable(standalone(), serverStatus("6.0.4", "wiredTiger", true), MAJORITY, null))
          .isFalse();
      assertThat(durable(standalone(), serverStatus("6.1.0", "wiredTiger", true), MAJORITY, null))
          .isTrue();
    }

    @Test
    @DisplayName("replica set: w=majority journaled by journal=true or the set's default")
    void replicaSetRule() {
      assertThat(durable(replicaSet(), wiredTiger7, W1_JOURNALED, null))
          .as("w=1 can be rolled back in a failover")
          .isFalse();
      assertThat(durable(replicaSet(), wiredTiger7, MAJORITY, true)).isTrue();
      assertThat(durable(replicaSet(), wiredTiger7, MAJORITY, false)).isFalse();
      assertThat(durable(replicaSet(), wiredTiger7, MAJORITY, null)).as("unknown").isFalse();
      assertThat(MongoStatus.needsMajorityJournalDefault(replicaSet(), MAJORITY)).isTrue();
      assertThat(MongoStatus.needsMajorityJournalDefault(replicaSet(), DEFAULT)).isFalse();
      assertThat(MongoStatus.needsMajorityJournalDefault(standalone(), MAJORITY)).isFalse();
    }

    @Test
    @DisplayName("through mongos only {w: majority, journal: true} counts")
    void sharded() {
      assertThat(durable(mongos(), null, MAJORITY, null)).isFalse();
      assertThat(durable(mongos(), null, W1_JOURNALED, null)).isFalse();
      assertThat(MongoStatus.durability(mongos(), null, DEFAULT, null).reason())
          .contains("not visible through mongos");
    }
  }

  @Nested
  @DisplayName("topology, process id and uptime")
  class Identity {

    @Test
    @DisplayName("the topology is told from msg and setName")
    void topology() {
      assertThat(MongoStatus.Topology.of(standalone())).isEqualTo(MongoStatus.Topology.STANDALONE);
      assertThat(MongoStatus.Topology.of(replicaSet())).isEqualTo(MongoStatus.Topology.REPLICA_SET);
      assertThat(MongoStatus.Topology.of(mongos())).isEqualTo(MongoStatus.Topology.SHARDED);
    }

    @Test
    @DisplayName("the process id comes from topologyVersion, absent before MongoDB 4.4")
    void processId() {
      ObjectId id = new ObjectId();
      Document hello =
          standalone()
              .append("topologyVersion", new Document("processId", id).append("counter", 0L));
      assertThat(MongoStatus.processId(hello)).isEqualTo(id);
      assertThat(MongoStatus.processId(standalone())).isNull();
    }

    @Test
    @DisplayName("uptime: serverStatus.uptimeMillis, else the process id's age less one second")
    void uptime() {
      Date started = new Date(1_700_000_000_000L);
      ObjectId id = new ObjectId(started);
      Document hello =
          new Document("localTime", new Date(started.getTime() + 10_500))
              .append("topologyVersion", new Document("processId", id));
      assertThat(MongoStatus.uptime(hello, new Document("uptimeMillis", 42L)))
          .isEqualTo(Duration.ofMillis(42));
      assertThat(MongoStatus.uptime(hello, null))
          .as("rounded down: the id counts whole seconds")
          .isEqualTo(Duration.ofMillis(9_500));
      assertThat(MongoStatus.uptime(standalone(), null)).isNull();
    }

    @Test
    @DisplayName("versions compare by major and minor")
    void versions() {
      assertThat(MongoStatus.versionAtLeast("6.1.0", 6, 1)).isTrue();
      assertThat(MongoStatus.versionAtLeast("7.0.0-rc1", 6, 1)).isTrue();
      assertThat(MongoStatus.versionAtLeast("6.0.14", 6, 1)).isFalse();
      assertThat(MongoStatus.versionAtLeast(null, 6, 1)).isFalse();
      assertThat(MongoStatus.versionAtLeast("garbage", 6, 1)).isFalse();
    }
  }
}
