package io.redlock.testservers;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Runs the MongoDB stand-in (mongo-java-server, memory backend) as its own process, so that a test
 * can freeze it ({@code SIGSTOP}), crash it ({@code SIGKILL}) or run it under libfaketime with a
 * clock that differs from the test's. Started by {@link io.redlock.testservers.MongoServer}; not
 * meant to be run by hand.
 *
 * <p>Usage: {@code MongoStandInMain <port>}. Listens on 127.0.0.1 only and exits when its standard
 * input closes (the parent died) or on {@code SIGTERM}.
 */
public final class MongoStandInMain {
  private MongoStandInMain() {}

  /** Entry point: binds the stand-in on 127.0.0.1:{@code args[0]}. */
  public static void main(String[] args) throws IOException {
    if (args.length != 1 || !args[0].matches("\\d{1,5}")) {
      System.err.println("usage: MongoStandInMain <port>");
      System.exit(2);
    }
    int port = Integer.parseInt(args[0]);
    MongoServer server = new MongoServer(new MemoryBackend());
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "stand-in-shutdown"));
    System.out.println("MongoDB stand-in listening on 127.0.0.1:" + port);
    System.out.flush();
    // Block until the parent closes our stdin (or dies): never outlive the test JVM.
    while (System.in.read() >= 0) {
      // discard
    }
    System.exit(0);
  }
}
