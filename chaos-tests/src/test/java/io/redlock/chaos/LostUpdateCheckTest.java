package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("C2: no lost updates")
class LostUpdateCheckTest {
  private static final String[] TWO_INCREMENTS = {
    "G c1 t0 r a 0 100 1000",
    "W c1 t0 a 150 ok 1",
    "R c1 t0 a 200 210 5 5 5",
    "G c2 t0 r b 0 300 1300",
    "W c2 t0 b 350 ok 2",
    "R c2 t0 b 400 410 5 5 5"
  };

  @Test
  @DisplayName("a counter equal to the completed increments passes")
  void exactCount() {
    assertThat(LostUpdateCheck.check(History.of(TWO_INCREMENTS), Map.of("r", 2L)).passed())
        .isTrue();
  }

  @Test
  @DisplayName("a counter below the completed increments is a lost update")
  void lostUpdate() {
    CheckResult result = LostUpdateCheck.check(History.of(TWO_INCREMENTS), Map.of("r", 1L));
    assertThat(result.failed()).isTrue();
    assertThat(result.detail()).contains("1 lost");
  }

  @Test
  @DisplayName("a counter above completed plus unknown increments fails too")
  void phantomIncrement() {
    assertThat(LostUpdateCheck.check(History.of(TWO_INCREMENTS), Map.of("r", 3L)).failed())
        .isTrue();
  }

  @Test
  @DisplayName("a holder killed before logging its increment may or may not have incremented")
  void killedMidIncrement() {
    String[] lines = {
      TWO_INCREMENTS[0], TWO_INCREMENTS[1], TWO_INCREMENTS[2], "G c3 t0 r c 0 500 1500"
    };
    assertThat(LostUpdateCheck.check(History.of(lines), Map.of("r", 1L)).passed()).isTrue();
    assertThat(LostUpdateCheck.check(History.of(lines), Map.of("r", 2L)).passed()).isTrue();
    assertThat(LostUpdateCheck.check(History.of(lines), Map.of("r", 0L)).failed()).isTrue();
  }

  @Test
  @DisplayName("a write refused by fencing does not count as an increment")
  void staleWriteNotCounted() {
    String[] lines = {
      TWO_INCREMENTS[0],
      "W c1 t0 a 150 stale 1",
      TWO_INCREMENTS[2],
      TWO_INCREMENTS[3],
      "W c2 t0 b 350 ok 1",
      TWO_INCREMENTS[5]
    };
    assertThat(LostUpdateCheck.check(History.of(lines), Map.of("r", 1L)).passed()).isTrue();
    assertThat(LostUpdateCheck.check(History.of(lines), Map.of("r", 2L)).failed()).isTrue();
  }

  @Test
  @DisplayName("without counters there is nothing to check")
  void noCounter() {
    assertThat(LostUpdateCheck.check(History.of(TWO_INCREMENTS), Map.of()).verdict())
        .isEqualTo(CheckResult.Verdict.NA);
  }
}
