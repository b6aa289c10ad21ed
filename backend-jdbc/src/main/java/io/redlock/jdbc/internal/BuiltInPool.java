package io.redlock.jdbc.internal;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import com.zaxxer.hikari.util.DriverDataSource;
import io.redlock.sql.internal.SqlErrors;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The HikariCP pool of a node built from a URL, and the {@link DataSource} it opens connections
 * through (the driver's, which remembers how the last attempt to open one ended).
 *
 * <p><b>Failures that waiting does not cure.</b> HikariCP opens connections on a thread of its own;
 * a borrower that finds none waits for the whole connection timeout and only then gets the last
 * failure. A node is awaited far less long, so a wrong password would look like a node that does
 * not answer. Here a borrow that finds the pool without any connection, while the last attempt to
 * open one failed for a reason no retry cures (what {@link SqlErrors#isNonTransient} says), fails
 * at once with that cause; while the pool has no connection a borrow looks again every {@value
 * #SLICE_MILLIS} ms, so that it also sees such a failure soon after it happens.
 *
 * <p><b>A server back from a restart is used at once.</b> HikariCP retries a failed attempt after a
 * pause that doubles up to 5 s. Here an attempt that fails for a reason a retry may cure is
 * repeated after a pause that doubles from {@value #REOPEN_PAUSE_MILLIS} ms to {@value
 * #REOPEN_PAUSE_MAX_MILLIS} ms until it succeeds or the pool closes.
 */
public final class BuiltInPool implements DataSource {
  private static final AtomicInteger POOLS = new AtomicInteger();
  private static final long SLICE_MILLIS = 20;
  private static final long REOPEN_PAUSE_MILLIS = 25;
  private static final long REOPEN_PAUSE_MAX_MILLIS = 250;

  /** How an attempt to open a connection failed. */
  private record Failure(SQLException error, boolean permanent) {}

  private final DataSource driver;
  private volatile HikariDataSource hikari;
  private final HikariPool pool;
  private final long borrowMillis;

  /** How the last attempt to open a connection failed; null if it succeeded (or none ended). */
  private volatile Failure lastFailure;

  /**
   * A pool of at most {@code size} connections to {@code options}' driver URL.
   *
   * @param driverProperties the driver's settings (timeouts and the like)
   */
  public BuiltInPool(
      JdbcOptions options, Properties driverProperties, int size, Duration connectionTimeout) {
    String url = options.driverUrl();
    this.driver = new DriverDataSource(url, null, driverProperties, null, null);
    this.borrowMillis = Math.max(1, connectionTimeout.toMillis());
    HikariConfig config = new HikariConfig();
    // not to open connections (this does): HikariCP looks at it to see MySQL's driver, whose
    // network timeout it then sets synchronously
    config.setJdbcUrl(url);
    config.setDataSource(this);
    config.setPoolName(
        "redlock-jdbc-" + POOLS.incrementAndGet() + "-" + JdbcOptions.subprotocol(url));
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(connectionTimeout.toMillis());
    config.setValidationTimeout(Math.max(250, connectionTimeout.toMillis() / 2));
    config.setInitializationFailTimeout(-1); // start without a connection: the node may be down
    config.setAutoCommit(true);
    config.setExceptionOverride(new EvictBrokenConnections());
    this.hikari = new HikariDataSource(config);
    this.pool = (HikariPool) hikari.getHikariPoolMXBean();
  }

  /**
   * A connection within the connection timeout; at once a {@link
   * SQLNonTransientConnectionException} caused by the driver's failure while the pool has no
   * connection and the last attempt to open one failed non-transiently; after the timeout a {@link
   * SQLTransientConnectionException} caused by the last failure, if any.
   */
  public Connection borrow() throws SQLException {
    long start = System.nanoTime();
    long deadline = start + TimeUnit.MILLISECONDS.toNanos(borrowMillis);
    while (true) {
      boolean empty = pool.getTotalConnections() == 0;
      Failure failure = lastFailure;
      if (empty && failure != null && failure.permanent()) {
        throw new SQLNonTransientConnectionException(
            "the pool has no connection, and its last attempt to open one failed",
            failure.error().getSQLState(),
            failure.error());
      }
      // with no connection at all, or connections failing to open, look again every slice
      boolean watch = empty || failure != null;
      long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
      try {
        return pool.getConnection(watch ? Math.min(left, SLICE_MILLIS) : left);
      } catch (SQLTransientConnectionException timeout) {
        if (!watch) {
          throw timeout;
        }
        Failure last = lastFailure;
        if (deadline - System.nanoTime() <= 0 && (last == null || !last.permanent())) {
          // the cause is the last failed attempt, which HikariCP does not see while it repeats
          throw new SQLTransientConnectionException(
              "no connection from the pool within "
                  + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)
                  + " ms",
              timeout.getSQLState(),
              last != null ? last.error() : timeout.getCause());
        }
      }
    }
  }

  /** Whether the pool has no connection at all: the database is down or unreachable. */
  public boolean unconnected() {
    return pool.getTotalConnections() == 0;
  }

  /** Closes the pool and its connections. */
  public void close() {
    hikari.close();
  }

  /** Opens a connection for HikariCP, repeating failures that a retry may cure (see above). */
  @Override
  public Connection getConnection() throws SQLException {
    long pause = REOPEN_PAUSE_MILLIS;
    while (true) {
      try {
        Connection c = driver.getConnection();
        lastFailure = null;
        return c;
      } catch (SQLException e) {
        boolean permanent = SqlErrors.isNonTransient(e);
        lastFailure = new Failure(e, permanent);
        if (permanent || !pausedBeforeAgain(pause)) {
          throw e;
        }
        pause = Math.min(REOPEN_PAUSE_MAX_MILLIS, pause * 2);
      }
    }
  }

  /** Pauses {@code millis} before another attempt; false if the pool is not (or no longer) open. */
  private boolean pausedBeforeAgain(long millis) {
    HikariDataSource h = hikari; // null while HikariCP's constructor opens the first connection
    if (h != null && h.isClosed()) {
      return false;
    }
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    return h == null || !h.isClosed();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("the credentials are in the URL");
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return driver.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    driver.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    driver.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return driver.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return driver.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : driver.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || driver.isWrapperFor(iface);
  }
}
