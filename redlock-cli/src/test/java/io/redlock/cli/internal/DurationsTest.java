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
