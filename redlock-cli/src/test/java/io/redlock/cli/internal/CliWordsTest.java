package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("The tool's words for the library's messages")
class CliWordsTest {
  @Test
  @DisplayName("Java advice becomes the tool's flags")
  void flags() {
    assertThat(
            CliWords.tell(
                "cannot build the Redlock: strictNodes is on and a node fails in a way no retry"
                    + " fixes; fix it, or build with strictNodes(false) to let the others outvote"
                    + " it"))
        .isEqualTo(
            "--strict is on (the default) and a node fails in a way no retry fixes; fix it, or"
                + " run with --no-strict to let the others outvote it");
    assertThat(
            CliWords.tell(
                "point every node at a separate server (allowSharedServers() lets a test or a"
                    + " demo run so)"))
        .isEqualTo("point every node at a separate server");
  }

  @Test
  @DisplayName("redaction keeps the quote after a redacted value, and a MySQL account")
  void redaction() {
    assertThat(
            CliWords.tell(
                "node URI 'jdbc:postgresql://h/db?user=u&password=***' is listed twice [nodes"
                    + " from --nodes]"))
        .contains("password=***' is listed twice");
    assertThat(
            CliWords.tell(
                "jdbc:mariadb://127.0.0.1:3306/db?user=u: authentication failed (Access denied"
                    + " for user 'u'@'127.0.0.1' (using password: YES))"))
        .contains("jdbc:mariadb://127.0.0.1:3306/db?user=u: authentication failed")
        .contains("'u'@'127.0.0.1'");
    assertThat(CliWords.tell("redis://:s3cret@h:6379: refused")).doesNotContain("s3cret");
  }

  @Test
  @DisplayName("a block of lines repeated from an earlier message is pointed to, not repeated")
  void blocksOnce() {
    String ddl = "create it with:\nCREATE TABLE t (\n  k TEXT\n);\nor let the node create it";
    List<String> out = CliWords.blocksOnce(List.of("a: " + ddl, "b: " + ddl, "c: refused"));
    assertThat(out.get(0)).isEqualTo("a: " + ddl);
    assertThat(out.get(1))
        .isEqualTo("b: create it with: (the statements above) or let the node create it");
    assertThat(out.get(2)).isEqualTo("c: refused");
  }
}
