package io.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Fencing and restart quarantine settings")
class SafetySettingsTest {

  @Test
  @DisplayName("are off by default and switched on by the with-methods")
  void defaultsAndCopies() {
    RedlockSettings defaults = RedlockSettings.defaults();

    assertThat(defaults.fencing()).isFalse();
    assertThat(defaults.restartQuarantine()).isNull();
    assertThat(defaults.restartQuarantineEnabled()).isFalse();
    RedlockSettings on =
        defaults
            .withFencing(true)
            .withRestartQuarantine(Duration.ofSeconds(30))
            .withRetry(5, Duration.ZERO, Duration.ZERO);
    assertThat(on.fencing()).isTrue();
    assertThat(on.restartQuarantine()).isEqualTo(Duration.ofSeconds(30));
    assertThat(on.retryAttempts()).as("other settings keep the safety ones").isEqualTo(5);
    assertThat(on.withRestartQuarantine(null).restartQuarantineEnabled()).isFalse();
  }

  @Test
  @DisplayName("reject a quarantine that is not positive, naming the setting")
  void validation() {
    assertThatThrownBy(() -> RedlockSettings.defaults().withRestartQuarantine(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("restartQuarantine must be positive");
    assertThatThrownBy(() -> Redlock.builder().restartQuarantine(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("noRestartQuarantine()");
  }

  @Test
  @DisplayName("a lease that does not fence says how to switch fencing on")
  void leaseWithoutFencing() {
    Lease lease =
        new Lease() {
          @Override
          public String resource() {
            return "r";
          }

          @Override
          public String token() {
            return "t";
          }

          @Override
          public Duration remainingValidity() {
            return Duration.ZERO;
          }

          @Override
          public boolean isValid() {
            return false;
          }

          @Override
          public boolean extend(Duration ttl) {
            return false;
          }

          @Override
          public int extensions() {
            return 0;
          }

          @Override
          public ReleaseOutcome release() {
            return new ReleaseOutcome(0, 0, 0, java.util.List.of());
          }

          @Override
          public ReleaseOutcome releaseAwaitingLate(Duration maxWait) {
            return release();
          }

          @Override
          public Lease keepAlive(KeepAlive options) {
            return this;
          }

          @Override
          public void onLost(java.util.function.Consumer<LeaseLost> listener) {}

          @Override
          public java.util.concurrent.CompletionStage<LeaseLost> whenLost() {
            return new java.util.concurrent.CompletableFuture<>();
          }

          @Override
          public void checkValid() {}

          @Override
          public java.util.concurrent.CompletableFuture<ReleaseOutcome> releaseAsync() {
            return java.util.concurrent.CompletableFuture.completedFuture(release());
          }

          @Override
          public java.util.concurrent.CompletableFuture<Boolean> extendAsync(Duration ttl) {
            return java.util.concurrent.CompletableFuture.completedFuture(false);
          }

          @Override
          public void close() {}
        };

    assertThatThrownBy(lease::fencingToken)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("fencing(true)");
    assertThat(lease.quarantinedNodes()).isEmpty();
  }
}
