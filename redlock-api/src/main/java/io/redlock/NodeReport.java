package io.redlock;

import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link Redlock#probe} found on one node: whether it answers lock calls and how fast, its
 * status report, and its store's clock. Nothing is guessed: what the node does not report is empty.
 *
 * @param node the node's name, redacted (safe to print)
 * @param error the first lock call that failed, with why (redacted, without the node's name in
 *     front); empty if every lock call was answered
 * @param roundTrips the round trip of every lock call that was answered, in order: per round a
 *     {@code tryAcquire}, an {@code extend} and a {@code release} of a fresh random key (the first
 *     includes connecting, for a node that connects lazily)
 * @param anomalies answers a healthy node does not give (a fresh key reported as held, an extend or
 *     release of a key just acquired refused)
 * @param capabilities what the node declares
 * @param status the node's status report, if it declares one and it was read
 * @param statusError why the status could not be read, if it could not
 * @param clockOffset the store's clock minus this machine's (positive: the store is ahead), as NTP
 *     estimates it from the read with the shortest round trip: the store's time minus the midpoint
 *     of the call on this machine's clock; empty if the node does not read its store's clock or
 *     every read failed
 * @param clockUncertainty half that read's round trip: the offset is right within this (plus the
 *     store clock's resolution)
 * @param clockError why reading the store's clock failed, if it did
 * @param clockNote why there is no offset (the backend does not read the store's clock), or that
 *     the store runs in this process and so reads this machine's own clock (SQLite, in-process H2)
 * @param quarantine where the node stands with respect to the Redlock's restart quarantine
 * @param quarantineLeft for {@link Quarantine#ACTIVE}: how long until the node's votes count
 */
public record NodeReport(
    String node,
    Optional<String> error,
    List<Duration> roundTrips,
    List<String> anomalies,
    NodeCapabilities capabilities,
    Optional<NodeStatus> status,
    Optional<String> statusError,
    Optional<Duration> clockOffset,
    Optional<Duration> clockUncertainty,
    Optional<String> clockError,
    Optional<String> clockNote,
    Quarantine quarantine,
    Optional<Duration> quarantineLeft) {

  /**
   * Keys of {@link NodeStatus#details()} that name the server's version, in order of preference.
   */
  private static final List<String> VERSION_KEYS =
      List.of("version", "server_version", "serverVersion", "redis_version");

  /** Validates and copies. */
  public NodeReport {
    Objects.requireNonNull(node, "node");
    Objects.requireNonNull(error, "error");
    roundTrips = List.copyOf(roundTrips);
    anomalies = List.copyOf(anomalies);
    Objects.requireNonNull(capabilities, "capabilities");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(statusError, "statusError");
    Objects.requireNonNull(clockOffset, "clockOffset");
    Objects.requireNonNull(clockUncertainty, "clockUncertainty");
    Objects.requireNonNull(clockError, "clockError");
    Objects.requireNonNull(clockNote, "clockNote");
    Objects.requireNonNull(quarantine, "quarantine");
    Objects.requireNonNull(quarantineLeft, "quarantineLeft");
  }

  /** True if the node answered at least one lock call. */
  public boolean reachable() {
    return !roundTrips.isEmpty();
  }

  /**
   * True if the node's vote counts now: it answers, and restart quarantine does not keep it out
   * (neither {@link Quarantine#ACTIVE} nor {@link Quarantine#STATUS_UNREADABLE}).
   */
  public boolean votes() {
    return reachable()
        && quarantine != Quarantine.ACTIVE
        && quarantine != Quarantine.STATUS_UNREADABLE;
  }

  /** The server's version from the status details, if the node reports one. */
  public Optional<String> version() {
    return status.flatMap(
        s ->
            VERSION_KEYS.stream()
                .map(s.details()::get)
                .filter(v -> v != null && !v.isBlank())
                .findFirst());
  }

  /** Where a node stands with respect to restart quarantine. */
  public enum Quarantine {
    /** Unreachable, or quarantine off and no status to judge by. */
    NOT_APPLICABLE("n/a"),
    /** Durable: a restart forgets nothing, so the node votes at once. */
    NOT_NEEDED("not-needed"),
    /** Not durable, and quarantine is off: a restart could grant a forgotten lock again. */
    OFF("off"),
    /** Not durable, up for longer than the quarantine: votes. */
    PASSED("passed"),
    /** Not durable, up for less than the quarantine: does not vote yet. */
    ACTIVE("active"),
    /** Quarantine on, but the node's status could not be read: its vote does not count. */
    STATUS_UNREADABLE("status-unreadable"),
    /** Quarantine on, but the node does not report a status: a build refuses such a node. */
    UNSUPPORTED("unsupported");

    private final String label;

    Quarantine(String label) {
      this.label = label;
    }

    /** The short name tools print, e.g. {@code status-unreadable}. */
    public String label() {
      return label;
    }
  }
}
