package io.redlock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class NodeUriTest {

  @Test
  @DisplayName("the scheme of a jdbc URL includes its sub-protocol")
  void jdbcScheme() {
    assertThat(NodeUri.parse("jdbc:postgresql://h:5432/db").scheme()).isEqualTo("jdbc:postgresql");
    assertThat(NodeUri.parse("JDBC:SQLite:/tmp/x.db").scheme()).isEqualTo("jdbc:sqlite");
    assertThat(NodeUri.parse("jdbc:h2:mem:locks;DB_CLOSE_DELAY=-1").scheme()).isEqualTo("jdbc:h2");
  }

  @Test
  @DisplayName("other schemes are the part before the first colon, lower-cased")
  void plainSchemes() {
    assertThat(NodeUri.parse("redis://a:6379").scheme()).isEqualTo("redis");
    assertThat(NodeUri.parse("Rediss://a:6379").scheme()).isEqualTo("rediss");
    assertThat(NodeUri.parse("mongodb+srv://c.example/x").scheme()).isEqualTo("mongodb+srv");
  }

  @Test
  @DisplayName("a URI without a scheme is rejected with the expected form, and the password hidden")
  void noScheme() {
    assertThatThrownBy(() -> NodeUri.parse("//u:hunter2@host:6379"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("has no scheme")
        .hasMessageContaining("redis://host:6379")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(() -> NodeUri.parse("  "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty");
  }

  @Test
  @DisplayName("query options are decoded in order")
  void query() {
    NodeUri uri = NodeUri.parse("redis://h:1/0?keyPrefix=a%3Ab&timeout=2s&flag#frag");
    assertThat(uri.query())
        .containsExactly(
            java.util.Map.entry("keyPrefix", "a:b"),
            java.util.Map.entry("timeout", "2s"),
            java.util.Map.entry("flag", ""));
  }

  @Test
  @DisplayName("passwords in the user info and in secret options never print")
  void redaction() {
    NodeUri uri = NodeUri.parse("redis://alice:s3cr%40t@h:6379/0?password=p1&x=1&TOKEN=t2");
    assertThat(uri.toString())
        .isEqualTo(uri.redacted())
        .isEqualTo("redis://alice:***@h:6379/0?password=***&x=1&TOKEN=***")
        .doesNotContain("s3cr", "p1", "t2");
    assertThat(uri.raw()).contains("s3cr%40t");
    assertThat(
            NodeUri.redact(
                "mongodb://h/?tlsCertificateKeyFilePassword=a&proxyPassword=b"
                    + "&authMechanismProperties=AWS_SESSION_TOKEN:c&w=majority"))
        .isEqualTo(
            "mongodb://h/?tlsCertificateKeyFilePassword=***&proxyPassword=***"
                + "&authMechanismProperties=***&w=majority");
    assertThat(NodeUri.redact("jdbc:h2:tcp://h/db;USER=sa;PASSWORD=pw;X=1"))
        .isEqualTo("jdbc:h2:tcp://h/db;USER=sa;PASSWORD=***;X=1");
  }

  @Test
  @DisplayName("redacting a message that holds a redacted name keeps the rest of the message")
  void redactionIsIdempotentInMessages() {
    String name = NodeUri.redact("jdbc:postgresql://h/db?user=u&password=secret");
    String message = name + ": connection refused; check the host";
    assertThat(NodeUri.redact(message)).isEqualTo(message);
    assertThat(NodeUri.redact(NodeUri.redact(message))).isEqualTo(message);
    assertThat(NodeUri.redact("x?password=secret: refused")).isEqualTo("x?password=*** refused");
  }
}
