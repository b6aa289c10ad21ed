package io.redlock.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("MongoServer")
class MongoServerTest {

  private static final Duration PROBE = Duration.ofSeconds(5);

  @Test
  @DisplayName("the stand-in answers buildInfo over TCP and says it is the stand-in")
  void standInAnswersAndSaysWhatItIs() throws IOException {
    try (MongoServer mongo = MongoServer.startStandIn()) {
      System.out.println("MongoDB stand-in: " + mongo.description());
      assertThat(mongo.source()).isEqualTo(MongoServer.Source.STAND_IN);
      assertThat(mongo.isReal()).isFalse();
      assertThat(mongo.connectionString()).matches("mongodb://127\\.0\\.0\\.1:\\d+");
      assertThat(mongo.description())
          .contains("stand-in", "mongo-java-server", "not a real mongod")
          .contains("reports MongoDB " + mongo.serverVersion())
          .contains(mongo.connectionString());
      assertThat(mongo.serverVersion()).matches("\\d+\\.\\d+.*");
      int port = port(mongo);
      MongoWireProbe.Identity id = MongoWireProbe.identify("127.0.0.1", port, PROBE);
      assertThat(id.version()).isEqualTo(mongo.serverVersion());
      assertThat(id.maxWireVersion()).isPositive();
    }
  }

  @Test
  @DisplayName("stop closes the stand-in's port and restart brings it back on the same port")
  void stopAndRestart() throws IOException {
    try (MongoServer mongo = MongoServer.startStandIn()) {
      int port = port(mongo);
      assertThat(mongo.canStop()).isTrue();
      mongo.stop();
      assertThat(mongo.isRunning()).isFalse();
      assertThatThrownBy(() -> MongoWireProbe.identify("127.0.0.1", port, PROBE))
          .isInstanceOf(IOException.class);
      mongo.restart();
      assertThat(mongo.isRunning()).isTrue();
      assertThat(MongoWireProbe.identify("127.0.0.1", port, PROBE).version())
          .isEqualTo(mongo.serverVersion());
    }
  }

  @Test
  @DisplayName("a stand-in process can be paused, resumed, killed and restarted on its port")
  void standInProcessFaults() throws IOException {
    try (MongoServer mongo = MongoServer.builder().start()) {
      System.out.println("MongoDB stand-in process: " + mongo.description());
      assertThat(mongo.description()).contains("own process pid");
      int port = port(mongo);
      assertThat(mongo.canPause()).isTrue();
      mongo.pause();
      assertThatThrownBy(() -> MongoWireProbe.identify("127.0.0.1", port, Duration.ofMillis(300)))
          .as("a frozen server accepts (the kernel does) but never answers")
          .isInstanceOf(IOException.class);
      mongo.resume();
      assertThat(MongoWireProbe.identify("127.0.0.1", port, PROBE).version())
          .isEqualTo(mongo.serverVersion());
      mongo.stop();
      assertThat(mongo.isRunning()).isFalse();
      assertThatThrownBy(() -> MongoWireProbe.identify("127.0.0.1", port, PROBE))
          .isInstanceOf(IOException.class);
      mongo.restart();
      assertThat(mongo.isRunning()).isTrue();
      assertThat(MongoWireProbe.identify("127.0.0.1", port, PROBE).version())
          .isEqualTo(mongo.serverVersion());
    }
  }

  @Test
  @DisplayName("the in-process stand-in cannot be paused, and says how to get one that can")
  void inProcessCannotPause() {
    try (MongoServer mongo = MongoServer.startStandIn()) {
      assertThat(mongo.canPause()).isFalse();
      assertThatThrownBy(mongo::pause)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("MongoServer.builder()");
    }
  }

  @Test
  @DisplayName("close is idempotent and frees the port")
  void closeIsIdempotent() {
    MongoServer mongo = MongoServer.startStandIn();
    int port = port(mongo);
    mongo.close();
    mongo.close();
    assertThatThrownBy(() -> MongoWireProbe.identify("127.0.0.1", port, PROBE))
        .isInstanceOf(IOException.class);
  }

  @Test
  @DisplayName("two stand-ins are independent servers on different ports")
  void standInsAreIndependent() {
    try (MongoServer a = MongoServer.startStandIn();
        MongoServer b = MongoServer.startStandIn()) {
      assertThat(a.connectionString()).isNotEqualTo(b.connectionString());
      a.stop();
      assertThat(b.isRunning()).isTrue();
    }
  }

  @Test
  @DisplayName("the environment value splits into connection strings, keeping multi-host ones")
  void environmentEntriesSplit() {
    assertThat(MongoServer.parseEntries(null)).isEmpty();
    assertThat(MongoServer.parseEntries("  ")).isEmpty();
    assertThat(
            MongoServer.parseEntries(
                "mongodb://a:1,b:2/?replicaSet=rs0, mongodb+srv://u:p@c.example.com/db"))
        .containsExactly("mongodb://a:1,b:2/?replicaSet=rs0", "mongodb+srv://u:p@c.example.com/db");
    assertThat(MongoServer.parseEntries("127.0.0.1:27017,127.0.0.1:27018"))
        .containsExactly("mongodb://127.0.0.1:27017", "mongodb://127.0.0.1:27018");
  }

  @Test
  @DisplayName(
      "a server from the environment that does not answer fails, naming it without password")
  void environmentServerMustAnswer() {
    int closed = FreePorts.find();
    assertThatThrownBy(() -> MongoServer.external("mongodb://user:s3cret@127.0.0.1:" + closed))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(MongoServer.ENVIRONMENT)
        .hasMessageContaining("127.0.0.1:" + closed)
        .hasMessageNotContaining("s3cret");
    assertThatThrownBy(() -> MongoServer.external("redis://127.0.0.1:6379"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not a MongoDB connection string");
  }

  @Test
  @DisplayName("a server from the environment is used as given and cannot be stopped")
  void environmentServerIsUsedAsGiven() {
    try (MongoServer standIn = MongoServer.startStandIn()) {
      String uri = standIn.connectionString() + "/?appName=test";
      MongoServer external = MongoServer.external(uri);
      assertThat(external.source()).isEqualTo(MongoServer.Source.ENVIRONMENT);
      assertThat(external.connectionString()).isEqualTo(uri);
      assertThat(external.serverVersion()).isEqualTo(standIn.serverVersion());
      assertThat(external.canStop()).isFalse();
      assertThatThrownBy(external::stop).isInstanceOf(IllegalStateException.class);
      external.close(); // does nothing to a server it did not start
      assertThat(standIn.isRunning()).isTrue();
    }
  }

  @Test
  @DisplayName("passwords are redacted from connection strings")
  void redaction() {
    assertThat(
            MongoServer.redact(
                "mongodb://u:p%40ss@h:1,h2:2/db?tlsCertificateKeyFilePassword=x&w=1"))
        .isEqualTo("mongodb://u:***@h:1,h2:2/db?tlsCertificateKeyFilePassword=***&w=1");
  }

  @Test
  @DisplayName("startReal never gives the stand-in, and explains why when there is none")
  void startRealIsNeverTheStandIn() {
    Optional<MongoServer> real = MongoServer.startReal();
    try {
      real.ifPresentOrElse(
          s -> assertThat(s.isReal()).isTrue(),
          () -> assertThat(MongoServer.realServerUnavailableReason()).contains("Docker"));
    } finally {
      real.ifPresent(MongoServer::close);
    }
  }

  private static int port(MongoServer mongo) {
    String uri = mongo.connectionString();
    return Integer.parseInt(uri.substring(uri.lastIndexOf(':') + 1));
  }
}
