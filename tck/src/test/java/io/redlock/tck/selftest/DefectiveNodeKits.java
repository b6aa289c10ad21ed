package io.redlock.tck.selftest;

import io.redlock.spi.LockNode;
import io.redlock.tck.InMemoryLockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import io.redlock.tck.selftest.DefectiveNode.Defect;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The compatibility kit applied to nodes with known bugs. These classes are not run by the build
 * directly (nested classes are not picked up by Surefire); {@link KitCatchesDefectsTest} runs each
 * one through the JUnit Platform testkit and checks which rules fail.
 */
final class DefectiveNodeKits {
  private DefectiveNodeKits() {}

  /** A kit whose nodes are clients of one in-memory store with the given flaw. */
  abstract static class FlawedClientKit extends LockNodeCompatibilityKit {
    private final InMemoryLockNode store = new InMemoryLockNode("memory:flawed");
    private final AtomicInteger clients = new AtomicInteger();
    private final SharedStoreClient.Flaw flaw;

    FlawedClientKit(SharedStoreClient.Flaw flaw) {
      this.flaw = flaw;
    }

    @Override
    protected LockNode createNode() {
      return new SharedStoreClient(store, "memory:flawed#" + clients.incrementAndGet(), flaw);
    }
  }

  static final class SilentReleaseNotifications extends FlawedClientKit {
    SilentReleaseNotifications() {
      super(SharedStoreClient.Flaw.SILENT_RELEASE_NOTIFICATIONS);
    }
  }

  static final class ZeroTimeoutRejected extends FlawedClientKit {
    ZeroTimeoutRejected() {
      super(SharedStoreClient.Flaw.ZERO_TIMEOUT_REJECTED);
    }
  }

  static final class AbandonNeverEnds extends FlawedClientKit {
    AbandonNeverEnds() {
      super(SharedStoreClient.Flaw.ABANDON_NEVER_ENDS);
    }

    @Override
    protected Duration replyTimeout() {
      return Duration.ofSeconds(
          2); // keeps the self-test short; the missing end is seen all the same
    }
  }

  static final class InspectIgnoresExpiry extends DefectiveKit {
    InspectIgnoresExpiry() {
      super(EnumSet.of(Defect.INSPECT_IGNORES_EXPIRY));
    }
  }

  static final class AbandonEndsTwice extends FlawedClientKit {
    AbandonEndsTwice() {
      super(SharedStoreClient.Flaw.ABANDON_ENDS_TWICE);
    }
  }

  static final class AbandonRunsDroppedCall extends FlawedClientKit {
    AbandonRunsDroppedCall() {
      super(SharedStoreClient.Flaw.ABANDON_RUNS_DROPPED_CALL);
    }
  }

  /** The correct node on a store with a 1-second clock: it must pass. */
  static final class CoarseClock extends LockNodeCompatibilityKit {
    private final CoarseClockNode.Store store = new CoarseClockNode.Store();
    private final AtomicInteger clients = new AtomicInteger();

    @Override
    protected LockNode createNode() {
      return new CoarseClockNode(store, clients.incrementAndGet());
    }

    @Override
    protected Optional<KeyInspector> keyInspector() {
      return Optional.of(store.inspector());
    }

    @Override
    protected boolean restartStore() {
      store.restart();
      return true;
    }
  }

  /** A kit whose nodes share one store with the given defects; the backdoor reads that store. */
  abstract static class DefectiveKit extends LockNodeCompatibilityKit {
    private final DefectiveNode.Store store;
    private final AtomicInteger clients = new AtomicInteger();

    DefectiveKit(Set<Defect> defects) {
      // One store per kit instance is enough: JUnit makes an instance per test, and every test
      // uses fresh keys; nodes of one test share it.
      this.store = new DefectiveNode.Store(defects);
    }

    @Override
    protected LockNode createNode() {
      return new DefectiveNode(store, clients.incrementAndGet());
    }

    @Override
    protected Optional<KeyInspector> keyInspector() {
      return Optional.of(store.inspector());
    }

    @Override
    protected boolean restartStore() {
      store.restart();
      return true;
    }
  }

  /** No defect: the control group. */
  static final class Correct extends DefectiveKit {
    Correct() {
      super(EnumSet.noneOf(Defect.class));
    }
  }

  static final class NonAtomicAcquire extends DefectiveKit {
    NonAtomicAcquire() {
      super(EnumSet.of(Defect.NON_ATOMIC_ACQUIRE));
    }
  }

  static final class IgnoresExpiry extends DefectiveKit {
    IgnoresExpiry() {
      super(EnumSet.of(Defect.IGNORES_EXPIRY));
    }
  }

  static final class ReleaseIgnoresToken extends DefectiveKit {
    ReleaseIgnoresToken() {
      super(EnumSet.of(Defect.RELEASE_IGNORES_TOKEN));
    }
  }

  static final class ExtendIgnoresExpiry extends DefectiveKit {
    ExtendIgnoresExpiry() {
      super(EnumSet.of(Defect.EXTEND_IGNORES_EXPIRY));
    }
  }

  static final class ValidatesInReply extends DefectiveKit {
    ValidatesInReply() {
      super(EnumSet.of(Defect.VALIDATES_IN_REPLY));
    }
  }

  static final class PasswordInName extends DefectiveKit {
    PasswordInName() {
      super(EnumSet.of(Defect.PASSWORD_IN_NAME));
    }
  }

  static final class CaseInsensitiveKeys extends DefectiveKit {
    CaseInsensitiveKeys() {
      super(EnumSet.of(Defect.CASE_INSENSITIVE_KEYS));
    }
  }

  static final class FenceLostWithKey extends DefectiveKit {
    FenceLostWithKey() {
      super(EnumSet.of(Defect.FENCE_LOST_WITH_KEY));
    }
  }

  static final class NonAtomicFence extends DefectiveKit {
    NonAtomicFence() {
      super(EnumSet.of(Defect.NON_ATOMIC_FENCE));
    }
  }

  static final class RaiseIgnoresToken extends DefectiveKit {
    RaiseIgnoresToken() {
      super(EnumSet.of(Defect.RAISE_IGNORES_TOKEN));
    }
  }

  static final class StaleStatus extends DefectiveKit {
    StaleStatus() {
      super(EnumSet.of(Defect.STALE_STATUS));
    }
  }

  static final class ClockInWrongUnits extends DefectiveKit {
    ClockInWrongUnits() {
      super(EnumSet.of(Defect.CLOCK_IN_WRONG_UNITS));
    }
  }

  static final class CachedClock extends DefectiveKit {
    CachedClock() {
      super(EnumSet.of(Defect.CACHED_CLOCK));
    }
  }

  static final class NonAtomicRelease extends DefectiveKit {
    NonAtomicRelease() {
      super(EnumSet.of(Defect.NON_ATOMIC_RELEASE));
    }
  }

  static final class NonAtomicExtend extends DefectiveKit {
    NonAtomicExtend() {
      super(EnumSet.of(Defect.NON_ATOMIC_EXTEND));
    }
  }

  static final class KeysTruncatedTo64 extends DefectiveKit {
    KeysTruncatedTo64() {
      super(EnumSet.of(Defect.KEYS_TRUNCATED_TO_64));
    }
  }

  static final class KeysTruncatedTo255 extends DefectiveKit {
    KeysTruncatedTo255() {
      super(EnumSet.of(Defect.KEYS_TRUNCATED_TO_255));
    }
  }

  static final class KeysHashedTo32Bits extends DefectiveKit {
    KeysHashedTo32Bits() {
      super(EnumSet.of(Defect.KEYS_HASHED_TO_32_BITS));
    }
  }

  static final class ExpiresEarly extends DefectiveKit {
    ExpiresEarly() {
      super(EnumSet.of(Defect.EXPIRES_EARLY));
    }
  }

  static final class FenceLostOnExpiry extends DefectiveKit {
    FenceLostOnExpiry() {
      super(EnumSet.of(Defect.FENCE_LOST_ON_EXPIRY));
    }
  }

  static final class FenceResetByPlainAcquire extends DefectiveKit {
    FenceResetByPlainAcquire() {
      super(EnumSet.of(Defect.FENCE_RESET_BY_PLAIN_ACQUIRE));
    }
  }

  static final class UptimeRoundedUp extends DefectiveKit {
    UptimeRoundedUp() {
      super(EnumSet.of(Defect.UPTIME_ROUNDED_UP));
    }
  }

  /** A correct store, but the unreachable node answers false instead of throwing. */
  static final class UnreachableAnswersFalse extends DefectiveKit {
    UnreachableAnswersFalse() {
      super(EnumSet.noneOf(Defect.class));
    }

    @Override
    protected Optional<LockNode> createUnreachableNode() {
      return Optional.of(
          new TcpProbeNode(
              InMemoryLockNodeCompatibilityTest.closedPort(),
              TcpProbeNode.Mode.ANSWERS_FALSE,
              "pw"));
    }
  }

  /**
   * A correct store, but the unreachable node has no read timeout and is pointed at a listener that
   * never speaks: its calls hang.
   */
  static final class UnreachableHangs extends DefectiveKit {
    private final ServerSocket silent;

    UnreachableHangs() {
      super(EnumSet.noneOf(Defect.class));
      try {
        // Never accepted: the kernel completes connections into the backlog, and no byte comes.
        silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    protected Optional<LockNode> createUnreachableNode() {
      return Optional.of(
          new TcpProbeNode(silent.getLocalPort(), TcpProbeNode.Mode.NO_READ_TIMEOUT, "pw"));
    }

    @Override
    protected Duration failureBound() {
      return Duration.ofSeconds(1); // keeps the self-test short; the hang is detected all the same
    }

    @org.junit.jupiter.api.AfterEach
    void closeSilentListener() throws IOException {
      silent.close();
    }
  }
}
