package io.redlock.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.ReleaseSubscription;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("ReleaseListeners")
class ReleaseListenersTest {

  @Test
  @DisplayName("calls the listeners of the released key only, each registration once")
  void releasedCallsThatKeysListeners() {
    ReleaseListeners<String> listeners = new ReleaseListeners<>("node-a");
    AtomicInteger a = new AtomicInteger();
    AtomicInteger b = new AtomicInteger();
    Runnable countA = a::incrementAndGet;
    listeners.register("k1", countA);
    listeners.register("k1", countA); // the same listener twice: two registrations
    listeners.register("k2", b::incrementAndGet);

    listeners.released("k1");
    assertThat(a.get()).isEqualTo(2);
    assertThat(b.get()).isZero();

    listeners.released("nobody-listens");
    listeners.released(null);
    assertThat(a.get() + b.get()).isEqualTo(2);
  }

  @Test
  @DisplayName("closing a subscription removes that registration only, once")
  void closeRemovesOneRegistration() {
    ReleaseListeners<String> listeners = new ReleaseListeners<>("node-a");
    AtomicInteger calls = new AtomicInteger();
    Runnable count = calls::incrementAndGet;
    ReleaseSubscription first = listeners.register("k", count);
    ReleaseSubscription second = listeners.register("k", count);

    first.close();
    first.close(); // idempotent: must not remove the second registration
    listeners.released("k");
    assertThat(calls.get()).isEqualTo(1);

    second.close();
    listeners.released("k");
    assertThat(calls.get()).isEqualTo(1);
    assertThat(listeners.keys()).isEmpty();
  }

  @Test
  @DisplayName("releasedAll calls every listener; a failing listener does not stop the others")
  void releasedAllAndFailures() {
    ReleaseListeners<Integer> listeners = new ReleaseListeners<>("node-a");
    AtomicInteger calls = new AtomicInteger();
    listeners.register(
        1,
        () -> {
          throw new IllegalStateException("listener bug");
        });
    listeners.register(2, calls::incrementAndGet);
    listeners.register(3, calls::incrementAndGet);

    listeners.releasedAll();
    assertThat(calls.get()).isEqualTo(2);
    listeners.released(1); // throws inside: swallowed
    assertThat(listeners.keys()).containsExactlyInAnyOrder(1, 2, 3);
  }
}
