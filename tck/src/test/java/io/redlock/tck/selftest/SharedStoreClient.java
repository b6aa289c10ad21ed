package io.redlock.tck.selftest;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One client of a shared {@link InMemoryLockNode}: what {@code createNode()} must return, a new
 * instance with its own lifecycle on the same store. Closing a client does not close the store.
 * Like a backend on a blocking driver, it runs each call on its own worker thread ({@link
 * Reply#supplyAsync}), a millisecond away, so that replies can be awaited before they are there and
 * abandoned (R16).
 */
final class SharedStoreClient implements LockNode {

  /** A contract bug the client can have (a defect for the kit to catch). */
  enum Flaw {
    NONE,
    /** Declares release notifications but never sends one. */
    SILENT_RELEASE_NOTIFICATIONS,
    /** {@code await(Duration.ZERO)} rejects the zero timeout. */
    ZERO_TIMEOUT_REJECTED,
    /** {@code abandon} never calls {@code ended}. */
    ABANDON_NEVER_ENDS,
    /** {@code abandon} calls {@code ended} with null at once, and again when the call ends. */
    ABANDON_ENDS_TWICE,
    /** {@code abandon} reports the call dropped (null) but leaves it queued: it runs late. */
    ABANDON_RUNS_DROPPED_CALL
  }

  private final InMemoryLockNode store;
  private final String name;
  private final Flaw flaw;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final ExecutorService worker;

  SharedStoreClient(InMemoryLockNode store, String name) {
    this(store, name, Flaw.NONE);
  }

  SharedStoreClient(InMemoryLockNode store, String name, Flaw flaw) {
    this.store = store;
    this.name = name;
    this.flaw = flaw;
    this.worker =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, name);
              t.setDaemon(true);
              return t;
            });
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return store.capabilities();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    return async(() -> store.tryAcquire(key, token, ttl));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    return async(() -> store.release(key, token));
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    return async(() -> store.extend(key, token, ttl));
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    return async(() -> store.tryAcquireFenced(key, token, ttl));
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    check(key, token);
    if (atLeast <= 0) {
      throw new IllegalArgumentException("atLeast must be positive, got " + atLeast);
    }
    return async(() -> store.raiseFence(key, token, atLeast));
  }

  @Override
  public Reply<NodeStatus> status() {
    checkOpen();
    return store.status();
  }

  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    checkOpen();
    if (flaw == Flaw.SILENT_RELEASE_NOTIFICATIONS) {
      LockNodeArguments.requireKey(key);
      return () -> {};
    }
    return store.onRelease(key, listener);
  }

  @Override
  public Reply<java.util.Optional<io.redlock.spi.KeyHolder>> inspect(String key) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    return Replies.supplyAsync(() -> store.inspect(key).await(Duration.ZERO), worker, name);
  }

  @Override
  public Reply<Instant> serverTime() {
    checkOpen();
    return store.serverTime();
  }

  /** Queues the store's call on this client's worker, with the client's flaw if any. */
  private <T> Reply<T> async(Supplier<Reply<T>> call) {
    Reply<T> reply = Replies.supplyAsync(() -> roundTrip(call).await(Duration.ZERO), worker, name);
    return flaw == Flaw.NONE || flaw == Flaw.SILENT_RELEASE_NOTIFICATIONS
        ? reply
        : new FlawedReply<>(reply, flaw);
  }

  /**
   * The store's call after a millisecond on the "network": calls queue behind each other on the
   * worker, so that one can be abandoned before it is sent (R16.3).
   */
  private static <T> Reply<T> roundTrip(Supplier<Reply<T>> call) {
    try {
      Thread.sleep(1);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return call.get();
  }

  /** A reply with one of the {@link Flaw}s of R16. */
  private record FlawedReply<T>(Reply<T> reply, Flaw flaw) implements Reply<T> {
    @Override
    public T await(Duration timeout) {
      if (flaw == Flaw.ZERO_TIMEOUT_REJECTED && timeout.isZero()) {
        throw new IllegalArgumentException("timeout must be positive, got " + timeout);
      }
      return reply.await(timeout);
    }

    @Override
    public void abandon(Consumer<? super T> ended) {
      switch (flaw) {
        case ABANDON_NEVER_ENDS -> reply.abandon(late -> {});
        case ABANDON_ENDS_TWICE -> {
          ended.accept(null);
          reply.abandon(ended);
        }
        case ABANDON_RUNS_DROPPED_CALL -> ended.accept(null);
        default -> reply.abandon(ended);
      }
    }
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      worker.shutdown(); // calls already queued still run
    }
  }

  @Override
  public String toString() {
    return name;
  }

  /** Arguments are checked here, by throwing, before anything is queued (R8). */
  private void check(String key, String token) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
  }
}
