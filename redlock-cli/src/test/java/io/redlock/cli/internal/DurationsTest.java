package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Durations on the command line")
class DurationsTest {
  @Test
  @DisplayName("are written with a unit, or in ISO-8601")
  void parsesUnits() {
    assertThat(Durations.parse("30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(Durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(Durations.parse("1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Durations.parse("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(Durations.parse("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(Durations.parse(" 250 us ")).isEqualTo(Duration.ofNanos(250_000));
    assertThat(Durations.parse("PT45S")).isEqualTo(Duration.ofSeconds(45));
  }

  @Test
  @DisplayName("may combine units, as doctor prints them: 1m30s, 1h5m, 2m 30.5s")
  void parsesCompounds() {
    assertThat(Durations.parse("1m30s")).isEqualTo(Duration.ofSeconds(90));
    assertThat(Durations.parse("1h5m")).isEqualTo(Duration.ofMinutes(65));
    assertThat(Durations.parse("2m 30.5s")).isEqualTo(Duration.ofMillis(150_500));
    assertThat(Durations.parse("1s500ms")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Durations.parse("3d4h")).isEqualTo(Duration.ofHours(76));
  }

  @Test
  @DisplayName("read a sign, so that an option can say a negative value must be positive")
  void readsSign() {
    assertThat(Durations.parse("-5s")).isEqualTo(Duration.ofSeconds(-5));
    assertThat(Durations.parse("-1m30s")).isEqualTo(Duration.ofSeconds(-90));
    assertThat(Durations.parse("+2s")).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  @DisplayName("print as people write them, and read back exactly what they print")
  void human() {
    assertThat(Durations.human(Duration.ofMillis(1))).isEqualTo("1ms");
    assertThat(Durations.human(Duration.ofSeconds(30))).isEqualTo("30s");
    assertThat(Durations.human(Duration.ofSeconds(90))).isEqualTo("1m30s");
    assertThat(Durations.human(Duration.ofMillis(1500))).isEqualTo("1.5s");
    assertThat(Durations.human(Duration.ofNanos(250_000))).isEqualTo("250µs");
    assertThat(Durations.human(Duration.ofNanos(1_500_000))).isEqualTo("1.5ms");
    assertThat(Durations.human(Duration.ofHours(2))).isEqualTo("2h");
    assertThat(Durations.human(Duration.ofSeconds(-5))).isEqualTo("-5s");
    assertThat(Durations.human(Duration.ZERO)).isEqualTo("0s");
    for (Duration d :
        new Duration[] {
          Duration.ofNanos(7),
          Duration.ofNanos(1_234_567),
          Duration.ofMillis(1),
          Duration.ofMillis(150),
          Duration.ofMillis(61_001),
          Duration.ofSeconds(3_723),
          Duration.ofDays(3).plusSeconds(1),
          Duration.ofSeconds(-90)
        }) {
      assertThat(Durations.parse(Durations.human(d))).as(Durations.human(d)).isEqualTo(d);
    }
  }

  @Test
  @DisplayName("rewrite the ISO-8601 durations of library messages as people write them")
  void humanize() {
    assertThat(Durations.humanize("ttl PT0.001S leaves no validity; use PT1M30S"))
        .isEqualTo("ttl 1ms leaves no validity; use 1m30s");
    assertThat(Durations.humanize("PTA is not one")).isEqualTo("PTA is not one");
    assertThat(Durations.humanize(null)).isNull();
  }

  @Test
  @DisplayName("without a unit are refused with a suggestion, not guessed")
  void bareNumberIsRefused() {
    assertThatThrownBy(() -> Durations.parse("30"))
        .hasMessage("duration '30' has no unit; write e.g. 30s or 30ms");
    assertThatThrownBy(() -> Durations.parse("soon"))
        .hasMessageContaining("'soon' is not a duration; write e.g. 30s");
  }

  @Test
  @DisplayName("print in a short human form")
  void formats() {
    assertThat(Durations.format(Duration.ofNanos(850_000))).isEqualTo("850 µs");
    assertThat(Durations.format(Duration.ofNanos(12_340_000))).isEqualTo("12.3 ms");
    assertThat(Durations.format(Duration.ofMillis(150))).isEqualTo("150 ms");
    assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1.50 s");
    assertThat(Durations.format(Duration.ofSeconds(150))).isEqualTo("2m30s");
    assertThat(Durations.format(Duration.ofMinutes(60))).isEqualTo("1h");
    assertThat(Durations.format(Duration.ofSeconds(5 * 3600 + 12 * 60 + 59))).isEqualTo("5h12m");
    assertThat(Durations.format(Duration.ofHours(76))).isEqualTo("3d4h");
  }
}
