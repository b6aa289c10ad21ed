package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("C3: fencing tokens strictly increase in grant order")
class FencingOrderCheckTest {

  @Test
  @DisplayName("increasing tokens across JVMs pass, whatever the file order")
  void increasing() {
    History h =
        History.of("G c2 t0 r b 20 300 1300", "G c1 t0 r a 10 100 1000", "G c1 t1 r c 25 400 900");
    assertThat(FencingOrderCheck.check(h).passed()).isTrue();
  }

  @Test
  @DisplayName("a token equal to an earlier one fails")
  void equalToken() {
    History h = History.of("G c1 t0 r a 10 100 1000", "G c2 t0 r b 10 300 1300");
    assertThat(FencingOrderCheck.check(h).failed()).isTrue();
  }

  @Test
  @DisplayName("a later grant with a lower token than any earlier one fails")
  void lowerThanAnEarlierMaximum() {
    History h =
        History.of("G c1 t0 r a 50 100 1000", "G c2 t0 r b 60 300 1300", "G c3 t0 r c 55 400 900");
    CheckResult result = FencingOrderCheck.check(h);
    assertThat(result.failed()).isTrue();
    assertThat(result.detail()).contains("c3/t0 got token 55 after c2/t0 got 60");
  }

  @Test
  @DisplayName("tokens of different resources are independent")
  void perResource() {
    History h = History.of("G c1 t0 r1 a 50 100 1000", "G c2 t0 r2 b 10 300 1300");
    assertThat(FencingOrderCheck.check(h).passed()).isTrue();
  }

  @Test
  @DisplayName("a missing token among fenced grants fails; no tokens at all is not applicable")
  void missingToken() {
    assertThat(
            FencingOrderCheck.check(History.of("G c1 t0 r a 5 100 1000", "G c2 t0 r b 0 300 900"))
                .failed())
        .isTrue();
    assertThat(FencingOrderCheck.check(History.of("G c1 t0 r a 0 100 1000")).verdict())
        .isEqualTo(CheckResult.Verdict.NA);
  }
}
