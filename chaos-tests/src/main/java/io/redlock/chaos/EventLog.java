package io.redlock.chaos;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Writes one event per line to a file, each line with a single {@code write} call and no buffer in
 * the JVM: a line is in the operating system's hands before the event that follows it happens, so a
 * JVM killed at any moment ({@code kill -9}) leaves a file that is complete up to its last full
 * line (at most that last line can be cut, and {@link History} ignores a line without its newline).
 *
 * <p>The line formats (fields separated by one space; times are {@link System#nanoTime()}):
 *
 * <pre>
 * S jvm pid nanos                                      started, connected, waiting for the go
 * G jvm thread resource token fence grant validEnd     a lease granted (fence 0: no fencing)
 * W jvm thread token nanos ok|stale|error value        the counter's read-modify-write ended
 * L jvm thread token nanos                             a long hold begins (the JVM will be killed)
 * R jvm thread token call done answered deleted nodes  a lease released (call: before release())
 * F jvm thread resource nanos reason                   an acquisition failed
 * H jvm nanos states inFlight                          each node's health (U/D/?) and calls in flight
 * E jvm thread nanos what                              an unexpected error
 * D jvm nanos                                          the client ended normally
 * </pre>
 *
 * <p>Thread-safe. Lines are small (under 200 bytes) and the client bounds how many it writes.
 */
public final class EventLog implements AutoCloseable {
  private final FileOutputStream out;
  private final String jvm;
  private boolean closed;

  /** A log that appends to {@code file}, creating it. */
  public EventLog(Path file, String jvm) {
    try {
      this.out = new FileOutputStream(file.toFile(), true);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open event file " + file, e);
    }
    this.jvm = jvm;
  }

  /** {@code S}: the client is connected and waits for the go. */
  public void started(long pid, long nanos) {
    line("S " + jvm + " " + pid + " " + nanos);
  }

  /** {@code G}: a lease was granted; {@code validEnd} = grant time + remaining validity. */
  public void granted(
      String thread, String resource, String token, long fence, long grant, long validEnd) {
    line(
        "G " + jvm + " " + thread + " " + resource + " " + token + " " + fence + " " + grant + " "
            + validEnd);
  }

  /** {@code W}: the read-modify-write of the counter ended with {@code outcome}. */
  public void worked(String thread, String token, long nanos, String outcome, long value) {
    line("W " + jvm + " " + thread + " " + token + " " + nanos + " " + outcome + " " + value);
  }

  /** {@code L}: a long hold begins. */
  public void longHold(String thread, String token, long nanos) {
    line("L " + jvm + " " + thread + " " + token + " " + nanos);
  }

  /** {@code R}: a lease was released; {@code call} was read just before {@code release()}. */
  public void released(
      String thread, String token, long call, long done, int answered, int deleted, int nodes) {
    line(
        "R " + jvm + " " + thread + " " + token + " " + call + " " + done + " " + answered + " "
            + deleted + " " + nodes);
  }

  /** {@code F}: an acquisition failed for {@code reason} (one word). */
  public void failed(String thread, String resource, long nanos, String reason) {
    line("F " + jvm + " " + thread + " " + resource + " " + nanos + " " + word(reason));
  }

  /**
   * {@code H}: every node's health, one letter per node in node order, and its calls in flight
   * (comma-separated).
   */
  public void health(long nanos, String states, String inFlight) {
    line("H " + jvm + " " + nanos + " " + states + " " + inFlight);
  }

  /** {@code E}: an unexpected error (its class name only, to keep lines small). */
  public void error(String thread, long nanos, Throwable what) {
    line("E " + jvm + " " + thread + " " + nanos + " " + what.getClass().getName());
  }

  /** {@code D}: the client ended normally. */
  public void done(long nanos) {
    line("D " + jvm + " " + nanos);
  }

  private static String word(String s) {
    return s == null || s.isEmpty() ? "-" : s.replaceAll("\\s+", "_");
  }

  private synchronized void line(String text) {
    if (closed) {
      return;
    }
    try {
      out.write((text + "\n").getBytes(StandardCharsets.US_ASCII)); // one write(2) per line
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write event", e);
    }
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      try {
        out.close();
      } catch (IOException ignored) {
        // nothing more will be written
      }
    }
  }
}
