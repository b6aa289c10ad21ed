package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.chaos.LivenessCheck.Fresh;
import io.redlock.chaos.LivenessCheck.Throughput;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("C4: liveness after the faults end")
class LivenessCheckTest {
  private static final long MS = 1_000_000L;
  private static final Fresh FRESH_OK = new Fresh(true, 20 * MS, 3_000 * MS);

  /** Grants every {@code everyMs} in [from, to). */
  private static List<Long> grants(List<Long> into, long fromMs, long toMs, long everyMs) {
    for (long t = fromMs; t < toMs; t += everyMs) {
      into.add(t * MS);
    }
    return into;
  }

  @Test
  @DisplayName("a fresh client that did not acquire fails, even without a throughput check")
  void freshClientFailed() {
    CheckResult result =
        LivenessCheck.check(new Fresh(false, 3_000 * MS, 3_000 * MS), Optional.empty());
    assertThat(result.failed()).isTrue();
    assertThat(LivenessCheck.check(FRESH_OK, Optional.empty()).passed()).isTrue();
  }

  @Test
  @DisplayName("throughput back at the pre-fault rate soon after the fault passes")
  void recovered() {
    List<Long> g = grants(new ArrayList<>(), 0, 3_000, 10); // 25 per bucket
    grants(g, 3_000, 10_000, 100); // the fault: 2.5 per bucket
    grants(g, 10_300, 14_000, 10); // back 300 ms after the fault
    CheckResult result =
        LivenessCheck.check(
            FRESH_OK, Optional.of(new Throughput(g, 0, 3_000 * MS, 10_000 * MS, 14_000 * MS)));
    assertThat(result.passed()).as(result.detail()).isTrue();
  }

  @Test
  @DisplayName("throughput that stays low for more than 2 s after the fault fails")
  void notRecovered() {
    List<Long> g = grants(new ArrayList<>(), 0, 3_000, 10);
    grants(g, 3_000, 14_000, 20); // half the rate from the fault on
    CheckResult result =
        LivenessCheck.check(
            FRESH_OK, Optional.of(new Throughput(g, 0, 3_000 * MS, 10_000 * MS, 14_000 * MS)));
    assertThat(result.failed()).isTrue();
    assertThat(result.detail()).contains("NOT back");
  }

  @Test
  @DisplayName("recovery that comes 2.5 s after the fault is too late")
  void recoveredTooLate() {
    List<Long> g = grants(new ArrayList<>(), 0, 3_000, 10);
    grants(g, 12_500, 14_000, 10);
    assertThat(
            LivenessCheck.check(
                    FRESH_OK,
                    Optional.of(new Throughput(g, 0, 3_000 * MS, 10_000 * MS, 14_000 * MS)))
                .failed())
        .isTrue();
  }

  @Test
  @DisplayName("clients that stopped before the recovery window ended cannot pass")
  void tooLittleData() {
    List<Long> g = grants(new ArrayList<>(), 0, 11_000, 10);
    CheckResult result =
        LivenessCheck.check(
            FRESH_OK, Optional.of(new Throughput(g, 0, 3_000 * MS, 10_000 * MS, 11_000 * MS)));
    assertThat(result.failed()).isTrue();
    assertThat(result.detail()).contains("too early");
  }
}
