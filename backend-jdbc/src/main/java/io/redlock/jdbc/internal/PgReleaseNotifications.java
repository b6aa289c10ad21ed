package io.redlock.jdbc.internal;

import io.redlock.sql.internal.ReleaseChannel;
import io.redlock.sql.internal.TableName;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release notifications of one PostgreSQL node: the release statement of this library calls {@code
 * pg_notify} on the table's channel with the released key's hash (see {@code
 * PostgresDialect.releaseChannel}); this class keeps one connection of its own that {@code LISTEN}s
 * on that channel, on a daemon thread started when the first listener registers, and calls the
 * listeners of each released key. A lost connection is opened again after a pause that doubles up
 * to {@link #MAX_BACKOFF}; after every (re)subscription all listeners are called, since releases
 * may have been missed meanwhile.
 *
 * <p>PostgreSQL delivers a notification when the releasing transaction commits (each release is its
 * own transaction), to every listening session; expiries are not reported.
 */
public final class PgReleaseNotifications extends ReleaseChannel {
  private static final Logger log = LoggerFactory.getLogger(PgReleaseNotifications.class);
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final Duration MIN_BACKOFF = Duration.ofMillis(50);
  static final Duration MAX_BACKOFF = Duration.ofSeconds(2);

  /** How long one wait for notifications lasts before the loop checks whether it was closed. */
  private static final int POLL_MILLIS = 500;

  /**
   * A path that dies silently (a NAT or firewall dropping an idle connection) raises no error on a
   * connection that only waits: after this long without a notification, a {@code SELECT 1} checks
   * the connection, bounded by {@link #CHECK_TIMEOUT_MILLIS}; if it fails, the node listens again.
   */
  static final long CHECK_AFTER_NANOS = 15_000_000_000L;

  private static final int CHECK_TIMEOUT_MILLIS = 10_000;

  /** Opens a new connection to the node's database (not from the lock pool). */
  @FunctionalInterface
  public interface Opener {
    /** A new connection; the listener owns and closes it. */
    Connection open() throws SQLException;
  }

  private final Opener opener;
  private volatile Connection connection;
  private volatile Thread thread;
  private volatile boolean subscribed;

  /**
   * @param name the node's redacted name, for logs
   * @param opener opens the listening connection
   * @param table the lock table, whose channel this listens on
   */
  public PgReleaseNotifications(String name, Opener opener, TableName table) {
    super(name, table);
    this.opener = opener;
  }

  /** Starts the listener thread. */
  @Override
  protected void start() {
    Thread t = new Thread(this::run, "redlock-pg-notify-" + THREADS.incrementAndGet() + " " + name);
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /** True while the listening connection is listening (for tests). */
  public boolean subscribed() {
    return subscribed;
  }

  private void run() {
    long backoffNanos = MIN_BACKOFF.toNanos();
    int failures = 0;
    while (!closed) {
      Connection c = null;
      try {
        c = opener.open();
        connection = c;
        if (closed) {
          break;
        }
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.execute("LISTEN \"" + channel.replace("\"", "\"\"") + "\"");
        }
        c.setNetworkTimeout(Runnable::run, CHECK_TIMEOUT_MILLIS);
        PGConnection pg = c.unwrap(PGConnection.class);
        subscribed = true;
        failures = 0;
        backoffNanos = MIN_BACKOFF.toNanos();
        listeners
            .releasedAll(); // releases while not listening were missed: a spurious wakeup is cheap
        long heardAt = System.nanoTime();
        while (!closed) {
          PGNotification[] received = pg.getNotifications(POLL_MILLIS);
          if (received != null && received.length > 0) {
            heardAt = System.nanoTime();
            for (PGNotification n : received) {
              listeners.released(n.getParameter());
            }
          } else if (System.nanoTime() - heardAt > CHECK_AFTER_NANOS) {
            try (Statement s = c.createStatement()) {
              s.execute("SELECT 1"); // throws if the path died: then listen again
            }
            heardAt = System.nanoTime();
          }
        }
      } catch (LinkageError e) {
        // e.g. a PostgreSQL driver too old for getNotifications(int): nothing to retry
        log.warn(
            "{}: release notifications are off: the PostgreSQL driver lacks LISTEN support ({})",
            name,
            e.toString());
        break;
      } catch (SQLException | RuntimeException e) {
        if (closed) {
          break;
        }
        failures++;
        // Once at debug per outage: the engine polls meanwhile, so this is not an error.
        if (failures == 1) {
          log.debug(
              "{}: release notifications interrupted ({}); listening again",
              name,
              e.getClass().getSimpleName());
        }
      } finally {
        subscribed = false;
        connection = null;
        closeQuietly(c);
      }
      if (closed) {
        break;
      }
      try {
        TimeUnit.NANOSECONDS.sleep(backoffNanos);
      } catch (InterruptedException e) {
        break; // close() interrupts the pause
      }
      backoffNanos = Math.min(backoffNanos * 2, MAX_BACKOFF.toNanos());
    }
  }

  private static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException | RuntimeException e) {
        // the connection is being dropped anyway
      }
    }
  }

  /** Stops listening and closes the connection. Idempotent. */
  @Override
  public void close() {
    closed = true;
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
    closeQuietly(connection);
  }
}
