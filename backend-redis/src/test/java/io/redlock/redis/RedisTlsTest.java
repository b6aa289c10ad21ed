package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockNonTransientException;
import io.redlock.testservers.RedisServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RedisLockNode over TLS (rediss://)")
class RedisTlsTest {
  private static final Duration WAIT = Duration.ofSeconds(5);
  private static SelfSignedCertificate certificate;
  private static RedisServer redis;

  @BeforeAll
  static void start() throws Exception {
    certificate =
        SelfSignedCertificate.create(Path.of("target", "tls", UUID.randomUUID().toString()));
    redis =
        RedisServer.builder()
            .password("tls-pw")
            .tls(certificate.certificate(), certificate.key())
            .start();
  }

  @AfterAll
  static void stop() {
    if (redis != null) {
      redis.close();
    }
  }

  @Test
  @DisplayName("a trusted certificate that names the host: locks work")
  void trusted() {
    try (RedisLockNode node =
        RedisLockNode.builder()
            .uri(redis.uri())
            .sslSocketFactory(certificate.trustingFactory())
            .build()) {
      assertThat(node.name()).startsWith("rediss://");
      String key = "tls:" + UUID.randomUUID();
      assertThat(node.tryAcquire(key, "t", Duration.ofSeconds(10)).await(WAIT).acquired()).isTrue();
      assertThat(node.extend(key, "t", Duration.ofSeconds(20)).await(WAIT)).isTrue();
      assertThat(node.release(key, "t").await(WAIT)).isTrue();
    }
  }

  @Test
  @DisplayName("an untrusted certificate is a non-transient TLS failure that says what to fix")
  void untrusted() {
    try (RedisLockNode node = RedisLockNode.fromUri(redis.uri())) {
      assertThatThrownBy(() -> node.tryAcquire("k", "t", Duration.ofSeconds(10)).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("TLS handshake failed")
          .hasMessageContaining("trustStore")
          .hasMessageNotContaining("tls-pw");
    }
  }

  @Test
  @DisplayName("a certificate for another host name fails unless hostname checks are off")
  void hostname() {
    String viaLocalhost = "rediss://:tls-pw@localhost:" + redis.port();
    try (RedisLockNode checked =
        RedisLockNode.builder()
            .uri(viaLocalhost)
            .sslSocketFactory(certificate.trustingFactory())
            .build()) {
      assertThatThrownBy(() -> checked.tryAcquire("k", "t", Duration.ofSeconds(10)).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("verifyHostname=false");
    }
    try (RedisLockNode unchecked =
        RedisLockNode.builder()
            .uri(viaLocalhost + "?verifyHostname=false")
            .sslSocketFactory(certificate.trustingFactory())
            .build()) {
      String key = "tls:" + UUID.randomUUID();
      assertThat(unchecked.tryAcquire(key, "t", Duration.ofSeconds(10)).await(WAIT).acquired())
          .isTrue();
      assertThat(unchecked.release(key, "t").await(WAIT)).isTrue();
    }
  }
}
