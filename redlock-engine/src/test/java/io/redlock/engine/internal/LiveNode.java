package io.redlock.engine.internal;

import io.redlock.RedlockTransientException;
import io.redlock.Ticker;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * An in-memory node on the system's clock, for tests of what runs on real schedules (keep-alive,
 * loss, async): records its calls in one log shared by the nodes of a test, in order, and can be
 * switched down (every call fails at once, as a refused connection).
 */
final class LiveNode extends WrappingNode {
  /** The log shared by a test's nodes: "extend token", "release token", ... */
  final List<String> log;

  private static final AtomicLong SEQUENCE = new AtomicLong();
  private volatile boolean down;

  LiveNode(String name, List<String> log) {
    super(new InMemoryLockNode(name, Ticker.system()));
    this.log = log;
  }

  static List<LiveNode> nodes(int n, List<String> log) {
    List<LiveNode> out = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new LiveNode("live-" + i, log));
    }
    return out;
  }

  static List<String> newLog() {
    return new CopyOnWriteArrayList<>();
  }

  LiveNode down(boolean value) {
    down = value;
    return this;
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    log.add(SEQUENCE.incrementAndGet() + " extend " + token + " " + name());
    return super.extend(key, token, ttl);
  }

  @Override
  <T> Reply<T> wrap(Supplier<Reply<T>> call) {
    if (down) {
      return Reply.failed(new RedlockTransientException(name(), "down (injected)", null));
    }
    return call.get();
  }
}
