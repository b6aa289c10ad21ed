package io.redlock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
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

  @Test
  @DisplayName("a password with an unencoded '@' or space shows no part of itself when malformed")
  void malformedPasswordsStayHidden() {
    assertThat(NodeUri.parse("redis://:pa@ss@127.0.0.1:18104").redacted())
        .isEqualTo("redis://:***@127.0.0.1:18104");
    assertThat(NodeUri.redact("'redis://:pa@ss@127.0.0.1:18104' has no host"))
        .isEqualTo("'redis://:***@127.0.0.1:18104' has no host");
    assertThat(NodeUri.redact("postgresql://locks:pg Secret@h/db"))
        .isEqualTo("postgresql://locks:***@h/db");
    // a list split at the space leaves postgresql://locks:pg, whose "port" is the password
    assertThat(NodeUri.redact("'postgresql://locks:pg' has a bad port"))
        .isEqualTo("'postgresql://locks:***' has a bad port");
    assertThat(NodeUri.redactUri("postgresql://locks:pg/x?y")).isEqualTo("postgresql://locks:***");
    assertThat(NodeUri.redactUri("redis://h/0?password=a b#c&x=1"))
        .isEqualTo("redis://h/0?password=***&x=1");
    assertThat(NodeUri.redact("redis://h:6379?password=a@b"))
        .isEqualTo("redis://h:6379?password=***");
    assertThatThrownBy(() -> NodeUri.parse("hunter2:s3cret@host:6379"))
        .hasMessageContaining("'***@host:6379' has no scheme")
        .hasMessageNotContaining("hunter2")
        .hasMessageNotContaining("s3cret");
    assertThatThrownBy(() -> NodeUri.parse("redis://h/0?password=a%zz"))
        .hasMessageContaining("'redis://h/0?password=***'")
        .hasMessageContaining("%25")
        .hasNoCause();
  }

  @Test
  @DisplayName("plain URIs and messages read as before")
  void plainUrisUnchanged() {
    for (String uri :
        new String[] {
          "redis://h:6379/0", "mongodb://a:27017,b:27018/db?w=majority", "jdbc:sqlite:/tmp/x.db",
          "jdbc:h2:mem:x;DB_CLOSE_DELAY=-1", "redis://[::1]:6379", "postgresql:///db?host=/run",
          "postgresql://locks@h/db"
        }) {
      assertThat(NodeUri.parse(uri).redacted()).isEqualTo(uri);
    }
    assertThat(NodeUri.redact("redis://${HOST}:${PORT}")).isEqualTo("redis://${HOST}:${PORT}");
    String message = "node 'redis://h:1' failed: refused (redis://a:2, redis://b:3).";
    assertThat(NodeUri.redact(message)).isEqualTo(message);
    String redacted = "'redis://h:***' has a bad port; 'postgresql://***' too";
    assertThat(NodeUri.redact(redacted)).isEqualTo(redacted);
  }

  @Test
  @DisplayName("a bad port is refused, naming the URI with its password hidden")
  void badPort() {
    for (String uri :
        new String[] {
          "redis://:s3cret@127.0.0.1:notaport",
          "redis://127.0.0.1:99999",
          "jdbc:postgresql://h:0/db?password=s3cret",
          "mongodb://a:27017,b:nope/db",
          "redis://[::1]:x"
        }) {
      assertThatThrownBy(() -> NodeUri.parse(uri))
          .as(uri)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("node URI '" + NodeUri.redactUri(uri) + "' has a bad port")
          .hasMessageNotContaining("s3cret");
    }
    assertThat(NodeUri.parse("jdbc:h2:tcp://h:9092/mem:x;USER=sa").scheme()).isEqualTo("jdbc:h2");
    assertThat(NodeUri.parse("jdbc:postgresql://h/db?user=a@b:c").scheme())
        .isEqualTo("jdbc:postgresql");
  }

  @Test
  @DisplayName("option values: durations, numbers, booleans, unknown names; errors name the option")
  void optionValues() {
    assertThat(NodeUri.duration("o", "86400000")).isEqualTo(Duration.ofDays(1));
    assertThat(NodeUri.duration("o", "250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(NodeUri.duration("o", "90s")).isEqualTo(Duration.ofSeconds(90));
    assertThat(NodeUri.duration("o", "30m")).isEqualTo(Duration.ofMinutes(30));
    assertThat(NodeUri.duration("o", "24h")).isEqualTo(Duration.ofHours(24));
    assertThat(NodeUri.duration("o", "7d")).isEqualTo(Duration.ofDays(7));
    assertThat(NodeUri.duration("o", "pt2h")).isEqualTo(Duration.ofHours(2));
    assertThatThrownBy(() -> NodeUri.duration("timeout", "soon"))
        .hasMessage(
            "timeout must be a duration such as 500 (milliseconds), 500ms, 2s, 1m, 24h or PT2S,"
                + " got 'soon'");
    assertThat(NodeUri.integer("n", " 8 ", 1, 10)).isEqualTo(8);
    assertThatThrownBy(() -> NodeUri.integer("n", "11", 1, 10))
        .hasMessage("n must be a whole number from 1 to 10, got '11'");
    assertThat(NodeUri.bool("b", "Yes")).isTrue();
    assertThat(NodeUri.bool("b", "0")).isFalse();
    assertThatThrownBy(() -> NodeUri.bool("b", "maybe"))
        .hasMessageContaining("b must be true or false");
    assertThat(NodeUri.unknownOption("colour", "redis://:pw@h?colour=1", List.of("a", "b")))
        .hasMessage("unknown option 'colour' in 'redis://:***@h?colour=1'; known options: a, b");
    assertThat(NodeUri.unknownOption("x/pw", "redis://h", List.of("a")).getMessage())
        .contains("not shown")
        .doesNotContain("x/pw");
  }
}
