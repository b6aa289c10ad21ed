package io.redlock.testservers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Free loopback ports, never fixed ones: other processes on the machine may hold any port. */
public final class FreePorts {
  private FreePorts() {}

  /** A port that was free on 127.0.0.1 a moment ago. */
  public static int find() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      socket.setReuseAddress(true);
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("could not find a free loopback port", e);
    }
  }
}
