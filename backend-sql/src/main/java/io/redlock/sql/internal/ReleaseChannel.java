package io.redlock.sql.internal;

import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.support.ReleaseListeners;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The bookkeeping of a node's release notifications on PostgreSQL, whichever client listens: the
 * release statements of this library call {@code pg_notify} on the table's channel ({@link
 * PostgresDialect#releaseChannel}) with the released key's hash in lower-case hex, and a subclass
 * keeps one connection LISTENing there, started when the first listener registers, and calls {@link
 * #listeners} for each released key.
 */
public abstract class ReleaseChannel implements AutoCloseable {
  /** The node's redacted name, for logs. */
  protected final String name;

  /** The channel to LISTEN on. */
  protected final String channel;

  /** Listeners by key hash (lower-case hex). */
  protected final ReleaseListeners<String> listeners;

  private final AtomicBoolean started = new AtomicBoolean();

  /** Set by {@link #close}. */
  protected volatile boolean closed;

  protected ReleaseChannel(String name, TableName table) {
    this.name = name;
    this.channel = PostgresDialect.releaseChannel(table);
    this.listeners = new ReleaseListeners<>(name);
  }

  /** Registers {@code listener} for a key (by its hash); starts listening on first use. */
  public final ReleaseSubscription register(byte[] keyHash, Runnable listener) {
    ReleaseSubscription subscription =
        listeners.register(HexFormat.of().formatHex(keyHash), listener);
    if (started.compareAndSet(false, true)) {
      start();
    }
    return subscription;
  }

  /** True once the first listener registered. */
  protected final boolean started() {
    return started.get();
  }

  /** Starts listening, once, without blocking. */
  protected abstract void start();
}
