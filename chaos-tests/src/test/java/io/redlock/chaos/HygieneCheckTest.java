package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("C5: no lock keys or rows left")
class HygieneCheckTest {

  @Test
  @DisplayName("empty stores and fencing counters pass")
  void onlyFenceCounters() {
    CheckResult result =
        HygieneCheck.check(
            Map.of("redis-1", List.of("{fence}:r"), "redis-2", List.of(), "pg-1", List.of()));
    assertThat(result.passed()).isTrue();
    assertThat(result.detail()).contains("1 fencing counters kept");
  }

  @Test
  @DisplayName("a lock key left on a Redis node or a live row in SQL fails, naming it")
  void lockKeyLeft() {
    CheckResult redis = HygieneCheck.check(Map.of("redis-1", List.of("{fence}:r", "r")));
    assertThat(redis.failed()).isTrue();
    assertThat(redis.detail()).contains("redis-1:r");
    assertThat(HygieneCheck.check(Map.of("pg-1", List.of("invoice-42"))).failed()).isTrue();
  }
}
