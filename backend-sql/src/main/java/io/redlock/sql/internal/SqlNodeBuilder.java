package io.redlock.sql.internal;

import io.redlock.spi.NodeUri;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * The settings the JDBC and the reactive PostgreSQL node builders share, and the reading of their
 * {@code redlock.*} URL options. A setting left unset is null; each builder applies its defaults.
 *
 * @param <B> the builder's own type, returned by every setter
 */
public abstract class SqlNodeBuilder<B extends SqlNodeBuilder<B>> {
  protected String name;
  protected TableName table;
  protected Boolean createTable;
  protected Integer poolSize;
  protected Duration connectionTimeout;
  protected Duration queryTimeout;
  protected Boolean releaseNotifications;

  protected SqlNodeBuilder() {}

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /**
   * The node's name in messages and logs (default: the URL with its password redacted, or the
   * DataSource's description). Must not contain secrets.
   */
  public B name(String name) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("name must be a non-empty string");
    }
    this.name = NodeUri.redact(name.strip());
    return self();
  }

  /**
   * The table (default {@code redlock_locks}); plain identifiers only, optionally {@code
   * schema.table}.
   *
   * @throws IllegalArgumentException for any other name, saying what is allowed
   */
  public B table(String table) {
    this.table = new TableName(table);
    return self();
  }

  /**
   * Whether the node may create its table if it is missing (default false: a missing table fails
   * the calls with the DDL to run). Safe when many clients start at once.
   */
  public B createTable(boolean allowed) {
    this.createTable = allowed;
    return self();
  }

  /**
   * PostgreSQL: whether releases are pushed to waiters with LISTEN/NOTIFY (default false). On:
   * every release statement also calls {@code pg_notify} on the table's channel and the node
   * LISTENs on one connection of its own, so a contended lock is handed on in milliseconds instead
   * of at the next 50–250 ms poll. The cost: PostgreSQL serialises the commits of all transactions
   * that notify, database-wide, through the WAL flush; measured with fsync on and 8 clients,
   * acquire+release transactions fell from about 7,500 to 3,900 per second. Turn it on for locks
   * that are often contended, on every node of the table (a node that does not notify is not heard
   * by the others). JDBC nodes ignore it for other databases and for a caller's DataSource.
   */
  public B releaseNotifications(boolean on) {
    this.releaseNotifications = on;
    return self();
  }

  /** The table to use: the one set, else the default. */
  protected TableName tableOrDefault() {
    return table != null ? table : new TableName(TableName.DEFAULT);
  }

  /** The first of the candidates that is not null, or null. */
  @SafeVarargs
  protected static <T> T first(T... candidates) {
    for (T c : candidates) {
      if (c != null) {
        return c;
      }
    }
    return null;
  }

  /** The boolean option {@code redlock.<option>}, or null if absent. */
  protected static Boolean bool(Map<String, String> o, String option) {
    return o.containsKey(option) ? NodeUri.bool("redlock." + option, o.get(option)) : null;
  }

  /** The integer option {@code redlock.<option>} within bounds, or null if absent. */
  protected static Integer integer(Map<String, String> o, String option, int min, int max) {
    return o.containsKey(option)
        ? NodeUri.integer("redlock." + option, o.get(option), min, max)
        : null;
  }

  /** The duration option {@code redlock.<option>}, or null if absent. */
  protected static Duration duration(Map<String, String> o, String option) {
    return o.containsKey(option) ? NodeUri.duration("redlock." + option, o.get(option)) : null;
  }

  protected static int requireRange(String setting, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          setting + " must be from " + min + " to " + max + ", got " + value);
    }
    return value;
  }

  /** {@code value}, if at least {@code min}; {@code minText} says the minimum in the message. */
  protected static Duration requireAtLeast(
      String setting, Duration value, Duration min, String minText) {
    Objects.requireNonNull(value, setting);
    if (value.compareTo(min) < 0) {
      throw new IllegalArgumentException(
          setting + " must be at least " + minText + ", got " + value.toMillis() + " ms");
    }
    return value;
  }
}
