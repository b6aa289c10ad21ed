package io.redlock.mongo.internal;

import com.mongodb.WriteConcern;
import java.time.Duration;
import java.util.Date;
import java.util.Locale;
import org.bson.Document;
import org.bson.types.ObjectId;

/**
 * How the MongoDB lock node reads a server's answers to {@code hello} and {@code serverStatus}:
 * which kind of deployment it is, what identifies the server process, and whether locks written
 * with the node's write concern survive a restart. Pure functions of the documents, so that the
 * rules can be checked against the answers of every kind of deployment.
 */
public final class MongoStatus {
  private MongoStatus() {}

  /** The kind of deployment the node talks to. */
  public enum Topology {
    STANDALONE,
    REPLICA_SET,
    SHARDED;

    /** From a {@code hello} (or {@code isMaster}) answer. */
    public static Topology of(Document hello) {
      if ("isdbgrid".equals(hello.get("msg"))) {
        return SHARDED;
      }
      return hello.get("setName") != null ? REPLICA_SET : STANDALONE;
    }

    /** In words, for details. */
    String describe(Document hello) {
      return switch (this) {
        case STANDALONE -> "standalone";
        case REPLICA_SET -> "replica set " + hello.get("setName");
        case SHARDED -> "sharded cluster (through mongos)";
      };
    }
  }

  /** Whether acknowledged locks survive a crash, restart or failover, and the rule that said so. */
  public record Durability(boolean durable, String reason) {}

  /** {@code hello.topologyVersion.processId} (4.4+), new after every restart; else null. */
  public static ObjectId processId(Document hello) {
    Object tv = hello.get("topologyVersion");
    if (tv instanceof Document d && d.get("processId") instanceof ObjectId id) {
      return id;
    }
    return null;
  }

  /**
   * {@code serverStatus.uptimeMillis}; else the time since the process id was made, less a second
   * (its timestamp counts whole seconds: never overstate); else null.
   */
  public static Duration uptime(Document hello, Document serverStatus) {
    if (serverStatus != null && serverStatus.get("uptimeMillis") instanceof Number millis) {
      return Duration.ofMillis(Math.max(0, millis.longValue()));
    }
    ObjectId id = processId(hello);
    if (id != null && hello.get("localTime") instanceof Date now) {
      long millis = now.getTime() - id.getDate().getTime() - 1000;
      return Duration.ofMillis(Math.max(0, millis));
    }
    return null;
  }

  /**
   * True if {@link #durability} needs the replica set's {@code writeConcernMajorityJournalDefault}:
   * on a replica set with {@code w: majority} and no {@code journal} setting.
   */
  public static boolean needsMajorityJournalDefault(Document hello, WriteConcern writeConcern) {
    return Topology.of(hello) == Topology.REPLICA_SET
        && isMajority(writeConcern)
        && writeConcern.getJournal() == null;
  }

  /**
   * Whether locks survive a restart: on disk before they are acknowledged (journaled, persistent
   * engine), on enough members that a failover cannot roll them back ({@code w: majority} on a
   * replica set or through mongos). {@code serverStatus} is null if not permitted, {@code
   * majorityJournalDefault} null if unknown or not needed.
   */
  public static Durability durability(
      Document hello,
      Document serverStatus,
      WriteConcern writeConcern,
      Boolean majorityJournalDefault) {
    Boolean journal = writeConcern.getJournal();
    boolean majority = isMajority(writeConcern);
    String wc = "write concern " + describe(writeConcern);
    if (Boolean.FALSE.equals(journal)) {
      return no(
          wc
              + " acknowledges locks before they are journaled, so a crash can lose them;"
              + " use the default {w: majority, journal: true}");
    }
    Topology topology = Topology.of(hello);
    if (topology == Topology.SHARDED) {
      return majority && Boolean.TRUE.equals(journal)
          ? yes(
              wc
                  + " through mongos: locks are journaled on a majority of each shard's replica"
                  + " set (the shards' storage engines are not visible through mongos and are taken"
                  + " to be persistent)")
          : no(
              "through mongos only {w: majority, journal: true} counts as durable, not "
                  + describe(writeConcern)
                  + "; a shard's failover could lose locks that mongos cannot see");
    }
    if (serverStatus == null) {
      return no(
          "the storage engine cannot be checked: this user may not run serverStatus;"
              + " grant it the clusterMonitor role (or the serverStatus action) on admin");
    }
    if (!(serverStatus.get("storageEngine") instanceof Document engine)) {
      return no(
          "the server reports no storage engine (serverStatus.storageEngine), so it is not"
              + " taken to keep data across a restart");
    }
    String on = " on storage engine '" + engine.get("name") + "'";
    if (!Boolean.TRUE.equals(engine.get("persistent"))) {
      return no("storage engine '" + engine.get("name") + "' does not keep data across a restart");
    }
    if (topology == Topology.STANDALONE) {
      if (Boolean.TRUE.equals(journal)) {
        return yes(wc + on);
      }
      return majority && versionAtLeast(serverStatus.get("version"), 6, 1)
          ? yes(wc + " on a standalone MongoDB 6.1+ waits for the journal," + on)
          : no(
              wc
                  + " on a standalone acknowledges locks before they are journaled; add"
                  + " journal=true (the default write concern has it)");
    }
    if (!majority) {
      return no(
          wc
              + " on a replica set: locks acknowledged by fewer than a majority can be"
              + " rolled back in a failover; use w=majority (the default)");
    }
    if (Boolean.TRUE.equals(journal)) {
      return yes(wc + " on a replica set," + on);
    }
    if (majorityJournalDefault == null) {
      return no(
          wc
              + " leaves journaling to the replica set's writeConcernMajorityJournalDefault,"
              + " which this user may not read (replSetGetConfig); add journal=true");
    }
    return majorityJournalDefault
        ? yes(wc + " on a replica set whose writeConcernMajorityJournalDefault is true," + on)
        : no(
            "the replica set's writeConcernMajorityJournalDefault is false, so w=majority"
                + " acknowledges locks before they are journaled; add journal=true");
  }

  private static Durability yes(String reason) {
    return new Durability(true, reason);
  }

  private static Durability no(String reason) {
    return new Durability(false, reason);
  }

  /** Like {@code {w: majority, journal: true}}. */
  public static String describe(WriteConcern concern) {
    Object w = concern.getWObject();
    return "{w: "
        + (w == null ? "server default" : w)
        + ", journal: "
        + (concern.getJournal() == null ? "unset" : concern.getJournal())
        + "}";
  }

  private static boolean isMajority(WriteConcern concern) {
    return "majority".equalsIgnoreCase(String.valueOf(concern.getWObject()));
  }

  /** True if a version string like {@code "7.0.12"} is at least major.minor. */
  static boolean versionAtLeast(Object version, int major, int minor) {
    if (!(version instanceof String text)) {
      return false;
    }
    String[] parts = text.toLowerCase(Locale.ROOT).split("[.-]");
    try {
      int ma = Integer.parseInt(parts[0]);
      int mi = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
      return ma > major || (ma == major && mi >= minor);
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
