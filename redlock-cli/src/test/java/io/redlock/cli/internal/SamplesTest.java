package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Latency samples")
class SamplesTest {
  @Test
  @DisplayName("give nearest-rank percentiles")
  void percentiles() {
    Samples s = new Samples();
    for (int i = 100; i >= 1; i--) {
      s.add(i);
    }
    assertThat(s.size()).isEqualTo(100);
    assertThat(s.median()).isEqualTo(50);
    assertThat(s.percentile(90)).isEqualTo(90);
    assertThat(s.percentile(99.9)).isEqualTo(100);
    assertThat(s.max()).isEqualTo(100);
    assertThat(s.meanNanos()).isEqualTo(50.5);
  }

  @Test
  @DisplayName("are zero when empty rather than failing")
  void empty() {
    assertThat(new Samples().percentile(99)).isZero();
  }
}
