package io.redlock.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A loopback TCP proxy whose forwarding can be frozen: bytes are held and sockets stay open, as in
 * a network partition or a stalled server, so that clients see no answer and no error. It can also
 * delay what it forwards, each way, as a longer network path would.
 */
final class FreezableProxy implements AutoCloseable {
  private final ServerSocket server;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final ExecutorService pumps =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "freezable-proxy");
            t.setDaemon(true);
            return t;
          });
  private volatile boolean frozen;
  private volatile long delayNanos;

  FreezableProxy(String host, int port) throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    pumps.execute(
        () -> {
          while (!server.isClosed()) {
            try {
              Socket client = server.accept();
              sockets.add(client);
              if (frozen) {
                continue; // accepted by the kernel, never answered
              }
              Socket upstream = new Socket(host, port);
              sockets.add(upstream);
              pumps.execute(() -> pump(client, upstream));
              pumps.execute(() -> pump(upstream, client));
            } catch (IOException e) {
              return;
            }
          }
        });
  }

  int port() {
    return server.getLocalPort();
  }

  void freeze(boolean on) {
    frozen = on;
  }

  /** Holds every chunk of bytes for {@code oneWay} before forwarding it (in both directions). */
  void delay(Duration oneWay) {
    delayNanos = oneWay.toNanos();
  }

  private void pump(Socket from, Socket to) {
    byte[] buffer = new byte[8192];
    try (InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream()) {
      for (int n; (n = in.read(buffer)) >= 0; ) {
        while (frozen && !server.isClosed()) {
          Thread.sleep(5);
        }
        long delay = delayNanos;
        if (delay > 0) {
          TimeUnit.NANOSECONDS.sleep(delay);
        }
        out.write(buffer, 0, n);
        out.flush();
      }
    } catch (IOException | InterruptedException e) {
      // the other side closed, or the proxy did
    }
    closeQuietly(from);
    closeQuietly(to);
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  @Override
  public void close() throws IOException {
    frozen = false;
    server.close();
    for (Socket socket : sockets) {
      closeQuietly(socket);
    }
    pumps.shutdownNow();
  }
}
