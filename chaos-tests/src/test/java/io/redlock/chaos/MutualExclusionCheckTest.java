package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("C1: no two holders overlap")
class MutualExclusionCheckTest {

  @Test
  @DisplayName("holds one after another across JVMs pass")
  void sequentialHolds() {
    History h =
        History.of(
            "G c1 t0 r a 0 100 1000",
            "R c1 t0 a 200 210 5 5 5",
            "G c2 t0 r b 0 201 1100",
            "R c2 t0 b 300 310 5 5 5",
            "G c1 t1 r c 0 300 1200");
    assertThat(MutualExclusionCheck.check(h).passed()).isTrue();
  }

  @Test
  @DisplayName("a grant before the previous holder's release call is a violation")
  void grantBeforeRelease() {
    History h =
        History.of(
            "G c1 t0 r a 0 100 1000",
            "R c1 t0 a 200 210 5 5 5",
            "G c2 t0 r b 0 199 1100",
            "R c2 t0 b 300 310 5 5 5");
    CheckResult result = MutualExclusionCheck.check(h);
    assertThat(result.failed()).isTrue();
    assertThat(result.detail()).contains("c1/t0").contains("c2/t0").contains("1 of 2");
  }

  @Test
  @DisplayName("a holder that never released holds until its validity end, and not after")
  void killedHolderUntilValidityEnd() {
    String killed = "G c1 t0 r a 0 100 1000";
    assertThat(MutualExclusionCheck.check(History.of(killed, "G c2 t0 r b 0 999 2000")).failed())
        .isTrue();
    assertThat(MutualExclusionCheck.check(History.of(killed, "G c2 t0 r b 0 1000 2000")).passed())
        .isTrue();
  }

  @Test
  @DisplayName("a release called after the validity end counts from the validity end")
  void lateRelease() {
    History h =
        History.of(
            "G c1 t0 r a 0 100 500",
            "R c1 t0 a 900 910 5 0 5", // paused past its validity
            "G c2 t0 r b 0 600 1600");
    assertThat(MutualExclusionCheck.check(h).passed()).isTrue();
  }

  @Test
  @DisplayName("an overlap with a long hold that is not the immediate predecessor is found")
  void overlapWithEarlierLongHold() {
    History h =
        History.of(
            "G c1 t0 r a 0 100 5000", // never released: holds until 5000
            "G c2 t0 r b 0 200 300",
            "R c2 t0 b 250 260 5 5 5",
            "G c3 t0 r c 0 400 900");
    CheckResult result = MutualExclusionCheck.check(h);
    assertThat(result.failed()).isTrue();
    assertThat(result.detail()).startsWith("2 of 3");
  }

  @Test
  @DisplayName("holds on different resources never conflict")
  void differentResources() {
    History h = History.of("G c1 t0 r1 a 0 100 1000", "G c2 t0 r2 b 0 100 1000");
    assertThat(MutualExclusionCheck.check(h).passed()).isTrue();
  }
}
