package io.redlock.jdbc.internal;

import com.zaxxer.hikari.pool.HikariPool;
import io.redlock.sql.internal.SqlErrors;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The built-in pool's connections, on both sides of HikariCP: the {@link DataSource} that the pool
 * opens them through (given to it with {@code HikariConfig.setDataSource}), which remembers how the
 * last attempt to open one ended, and the borrows from the pool, which use that memory.
 *
 * <p><b>Failures that waiting does not cure.</b> HikariCP opens connections on a thread of its own
 * and retries failed attempts with a backoff; a borrower that finds no connection waits for the
 * pool's whole connection timeout (2 s by default) and only then gets the last failure, as the
 * cause of a timeout. A node is awaited far less long (its node timeout), so a wrong password
 * looked like a node that does not answer. Here a borrow that finds the pool without any
 * connection, while the last attempt to open one failed for a reason that no retry cures (a wrong
 * password, an unknown database: what {@link SqlErrors} calls non-transient), fails at once with
 * that cause. While the pool has no connection a borrow waits for one in slices of {@value
 * #SLICE_MILLIS} ms, so that it also sees such a failure within a slice of its happening (the first
 * attempt of a fresh node, say). Other failures (refused, the server starting up) are waited out as
 * before, and the attempts themselves are still HikariCP's: lazy, in the background, and a success
 * clears the memory.
 *
 * <p><b>A server back from a restart is used at once.</b> HikariCP retries a failed attempt after a
 * pause that doubles up to 5 s, so a server restarted after a few seconds down went unused for
 * seconds more. Here an attempt that fails for a reason a retry may cure is repeated, after a pause
 * that doubles from {@value #REOPEN_PAUSE_MILLIS} ms to {@value #REOPEN_PAUSE_MAX_MILLIS} ms, until
 * it succeeds or the pool closes; HikariCP sees only failures no retry cures.
 *
 * <p><b>Validation within a call's deadline.</b> HikariCP validates a connection that sat idle for
 * over 500 ms before it lends it, for up to its validation timeout (at least 1 s with MariaDB's
 * driver, which counts whole seconds), whatever the borrower's own time limit. On a thread that
 * runs a call with a {@link CallDeadline} (an inline call), the connections of this DataSource
 * validate themselves within what is left of it instead: a ping bounded by the network timeout.
 */
public final class PoolConnections implements DataSource {
  /** How long a borrow waits at a time while the pool has no connection. */
  static final long SLICE_MILLIS = 20;

  /** The first pause before another attempt to open a connection that failed transiently. */
  static final long REOPEN_PAUSE_MILLIS = 25;

  /** The longest such pause. */
  static final long REOPEN_PAUSE_MAX_MILLIS = 250;

  private static final Executor DIRECT = Runnable::run;
  private static final Method IS_VALID;

  static {
    try {
      IS_VALID = Connection.class.getMethod("isValid", int.class);
    } catch (NoSuchMethodException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** How an attempt to open a connection failed. */
  private record Failure(Throwable error, boolean permanent) {}

  private final DataSource driver;
  private volatile HikariPool pool;

  /** How the last attempt to open a connection failed; null if it succeeded (or none ended). */
  private volatile Failure lastFailure;

  /** A DataSource that opens connections through {@code driver} (the driver's own). */
  public PoolConnections(DataSource driver) {
    this.driver = driver;
  }

  /** The pool built on this DataSource; call once, before the first {@link #borrow}. */
  public void attach(HikariPool pool) {
    this.pool = pool;
  }

  /**
   * A connection from the pool within {@code millis}; at once a {@link
   * SQLNonTransientConnectionException} caused by the driver's failure while the pool has no
   * connection and the last attempt to open one failed non-transiently; after {@code millis} a
   * {@link SQLTransientConnectionException} caused by the last failure, if any.
   */
  public Connection borrow(long millis) throws SQLException {
    HikariPool p = pool;
    long start = System.nanoTime();
    long deadline = start + TimeUnit.MILLISECONDS.toNanos(Math.max(0, millis));
    while (true) {
      Failure failure = lastFailure;
      boolean empty = p.getTotalConnections() == 0;
      if (empty && failure != null && failure.permanent()) {
        throw refused(failure);
      }
      // with no connection at all, or connections failing to open, look again every slice
      boolean watch = empty || failure != null;
      long left = ceilMillis(deadline - System.nanoTime());
      try {
        return p.getConnection(watch ? Math.min(left, SLICE_MILLIS) : left);
      } catch (SQLTransientConnectionException timeout) {
        if (!watch) {
          throw timeout;
        }
        if (deadline - System.nanoTime() <= 0) {
          Failure last = lastFailure;
          if (last != null && last.permanent() && p.getTotalConnections() == 0) {
            throw refused(last);
          }
          // the pool's message would name the last slice, not the whole wait; the cause is the
          // last failed attempt (which HikariCP does not see while the attempts are repeated here)
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

  private static SQLException refused(Failure failure) {
    Throwable cause = failure.error();
    return new SQLNonTransientConnectionException(
        "the pool has no connection, and its last attempt to open one failed",
        cause instanceof SQLException sql ? sql.getSQLState() : null,
        cause);
  }

  private static long ceilMillis(long nanos) {
    return Math.max(1, (nanos + 999_999) / 1_000_000);
  }

  @Override
  public Connection getConnection() throws SQLException {
    return opened(driver::getConnection);
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return opened(() -> driver.getConnection(username, password));
  }

  @FunctionalInterface
  private interface Open {
    Connection open() throws SQLException;
  }

  private Connection opened(Open attempt) throws SQLException {
    long pause = REOPEN_PAUSE_MILLIS;
    Connection c;
    while (true) {
      try {
        c = attempt.open();
        break;
      } catch (SQLException e) {
        boolean permanent = SqlErrors.isNonTransient(e);
        lastFailure = new Failure(e, permanent);
        if (permanent || !pausedBeforeAgain(pause)) {
          throw e;
        }
        pause = Math.min(REOPEN_PAUSE_MAX_MILLIS, pause * 2);
      } catch (RuntimeException | Error e) {
        lastFailure = new Failure(e, false);
        throw e;
      }
    }
    lastFailure = null;
    if (c == null) {
      return null;
    }
    return (Connection)
        Proxy.newProxyInstance(
            PoolConnections.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            new BoundedValidation(c));
  }

  /** Pauses {@code millis} before another attempt; false if the pool is not (or no longer) open. */
  private boolean pausedBeforeAgain(long millis) {
    HikariPool p = pool;
    if (p == null || p.poolState != HikariPool.POOL_NORMAL) {
      return false;
    }
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    return p.poolState == HikariPool.POOL_NORMAL;
  }

  /**
   * A driver's connection whose {@link Connection#isValid} keeps to the current thread's {@link
   * CallDeadline}, if it has one: a {@code SELECT 1} under a network timeout of what is left (the
   * drivers' own {@code isValid} counts whole seconds: MariaDB's sets the socket timeout to them).
   * Everything else goes to the driver's connection as it is.
   */
  private static final class BoundedValidation implements InvocationHandler {
    private final Connection delegate;

    BoundedValidation(Connection delegate) {
      this.delegate = delegate;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      if (method.equals(IS_VALID) && CallDeadline.active()) {
        return validWithin(CallDeadline.nanosLeft());
      }
      switch (method.getName()) {
        case "equals" -> {
          if (method.getParameterCount() == 1) {
            return proxy == args[0];
          }
        }
        case "hashCode" -> {
          if (method.getParameterCount() == 0) {
            return System.identityHashCode(proxy);
          }
        }
        default -> {
          // the driver's
        }
      }
      try {
        return method.invoke(delegate, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }

    private boolean validWithin(long nanos) {
      if (nanos <= 0) {
        return false; // no time left to find out: the pool drops it and opens another
      }
      try {
        int before = delegate.getNetworkTimeout();
        int millis = (int) Math.min(Integer.MAX_VALUE, ceilMillis(nanos));
        boolean change = before == 0 || millis < before;
        if (change) {
          delegate.setNetworkTimeout(DIRECT, millis);
        }
        try (Statement s = delegate.createStatement()) {
          s.execute("SELECT 1");
        } finally {
          if (change && !delegate.isClosed()) {
            delegate.setNetworkTimeout(DIRECT, before);
          }
        }
        return true;
      } catch (SQLException | RuntimeException e) {
        return false;
      }
    }
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

  @Override
  public String toString() {
    return "PoolConnections[" + driver.getClass().getSimpleName() + "]";
  }
}
