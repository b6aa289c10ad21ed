package io.redlock.mongo;

import io.redlock.testservers.MongoServer;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * The servers a test class runs on, one run each: the stand-in always, a real MongoDB when one is
 * available ({@value MongoServer#ENVIRONMENT}, or Testcontainers with Docker), else that run is
 * skipped with the reason. Each run prints which server it used.
 */
enum MongoTarget {
  STAND_IN("the mongo-java-server stand-in"),
  REAL("a real MongoDB");

  private final String label;

  MongoTarget(String label) {
    this.label = label;
  }

  /** Starts (or connects to) this target's server, or skips the run if there is none. */
  MongoServer start(String testClass) {
    if (this == STAND_IN) {
      MongoServer server = MongoServer.startStandIn();
      System.out.println(testClass + " on " + server.description());
      return server;
    }
    Optional<MongoServer> real = MongoServer.startReal();
    if (real.isEmpty()) {
      System.out.println(
          testClass + " on a real MongoDB: SKIPPED, " + MongoServer.realServerUnavailableReason());
    }
    Assumptions.assumeTrue(real.isPresent(), MongoServer::realServerUnavailableReason);
    System.out.println(testClass + " on " + real.get().description());
    return real.get();
  }

  @Override
  public String toString() {
    return label;
  }
}
