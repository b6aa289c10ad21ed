package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@DisplayName("Event files")
class HistoryTest {

  @Test
  @DisplayName("what the event log writes parses back, and a line cut by a kill is ignored")
  void roundTripAndCutLine(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("c1.events");
    try (EventLog log = new EventLog(file, "c1")) {
      log.started(42, 1);
      log.granted("t0", "r", "tokA", 7, 100, 200);
      log.worked("t0", "tokA", 150, "ok", 1);
      log.released("t0", "tokA", 160, 170, 5, 5, 5);
      log.failed("t1", "r", 180, "HELD");
      log.health(190, "UUDDU", "0,0,3,2,0");
      log.longHold("t1", "tokB", 195);
      log.error("t1", 196, new IllegalStateException("x y"));
      log.done(199);
    }
    Files.writeString(file, "G c1 t1 r tokB 8 300", java.nio.file.StandardOpenOption.APPEND);

    History h = History.read(List.of(file));

    assertThat(h.grants()).containsExactly(new History.Grant("c1", "t0", "r", "tokA", 7, 100, 200));
    assertThat(h.workOf("tokA")).hasValueSatisfying(w -> assertThat(w.ok()).isTrue());
    assertThat(h.releaseOf("tokA")).hasValueSatisfying(r -> assertThat(r.answered()).isEqualTo(5));
    assertThat(h.failures())
        .singleElement()
        .satisfies(f -> assertThat(f.reason()).isEqualTo("HELD"));
    assertThat(h.health()).singleElement().satisfies(s -> assertThat(s.state(2)).isEqualTo('D'));
    assertThat(h.marks("L")).hasSize(1);
    assertThat(h.marks("E")).hasSize(1);
    assertThat(h.marks("D")).hasSize(1);
    assertThat(h.cutLines()).isOne();
  }

  @Test
  @DisplayName("a malformed complete line is an error, not something to skip")
  void malformedLine() {
    assertThatThrownBy(() -> History.ofText("G c1 t0 r tok 1 2\nD c1 5\n"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("line 1");
  }
}
