package io.redlock.mongo.internal;

import com.mongodb.event.ConnectionCreatedEvent;
import com.mongodb.event.ConnectionPoolListener;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the connections a node's own client opens. A restarted server breaks every connection, so
 * any answer from a new server process arrives over a connection opened after the restart; the
 * count therefore changes before such an answer is read, and a status cached under the old count is
 * known to be stale. The driver fires the event on the thread that is about to use the connection,
 * before anything is sent over it.
 */
public final class ConnectionWatch implements ConnectionPoolListener {
  private final AtomicLong created = new AtomicLong();

  /** For the driver's connection pool settings. */
  public ConnectionWatch() {}

  @Override
  public void connectionCreated(ConnectionCreatedEvent event) {
    created.incrementAndGet();
  }

  /** How many connections have been created so far. */
  long generation() {
    return created.get();
  }
}
