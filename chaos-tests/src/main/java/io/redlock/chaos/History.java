package io.redlock.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The events of one or more clients, parsed from their event files ({@link EventLog} describes the
 * lines). A file's last line without a newline (its JVM was killed while writing it) is ignored;
 * any other line that does not parse is an error, since a checker must not judge a history it
 * misread.
 */
public final class History {

  /** A lease as its holder saw it. {@code fence} is 0 without fencing. */
  public record Grant(
      String jvm,
      String thread,
      String resource,
      String token,
      long fence,
      long grantNanos,
      long validEndNanos) {}

  /**
   * The end of a read-modify-write: {@code ok}, {@code stale} (refused by fencing), {@code error}.
   */
  public record Work(
      String jvm, String thread, String token, long nanos, String outcome, long value) {
    /** True if the increment was applied. */
    public boolean ok() {
      return outcome.equals("ok");
    }
  }

  /** A release: {@code callNanos} was read just before {@code release()} was called. */
  public record Release(
      String jvm,
      String thread,
      String token,
      long callNanos,
      long doneNanos,
      int answered,
      int deleted,
      int nodes) {}

  /** A failed acquisition. */
  public record Failure(String jvm, String thread, String resource, long nanos, String reason) {}

  /**
   * The health of every node as one client saw it: one letter per node (U, D, ?), and each node's
   * calls in flight, comma-separated.
   */
  public record HealthSample(String jvm, long nanos, String states, String inFlight) {
    /** The state letter of node {@code index}. */
    public char state(int index) {
      return states.charAt(index);
    }
  }

  /** Something else a client reported: {@code S}, {@code L}, {@code E} or {@code D}, as written. */
  public record Mark(String kind, String jvm, long nanos, String text) {}

  private final List<Grant> grants = new ArrayList<>();
  private final List<Work> works = new ArrayList<>();
  private final List<Release> releases = new ArrayList<>();
  private final List<Failure> failures = new ArrayList<>();
  private final List<HealthSample> health = new ArrayList<>();
  private final List<Mark> marks = new ArrayList<>();
  private final Map<String, Release> releaseByToken = new HashMap<>();
  private final Map<String, Work> workByToken = new HashMap<>();
  private int cutLines;

  private History() {}

  /** Reads and merges the given event files. */
  public static History read(Collection<Path> files) {
    History h = new History();
    for (Path file : files) {
      byte[] bytes;
      try {
        bytes = Files.exists(file) ? Files.readAllBytes(file) : new byte[0];
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      h.addText(file.getFileName().toString(), new String(bytes, StandardCharsets.US_ASCII));
    }
    return h;
  }

  /** Parses lines given as text (for tests of the checkers): every line counts as complete. */
  public static History of(String... lines) {
    History h = new History();
    int n = 1;
    for (String line : lines) {
      h.add("synthetic", n++, line);
    }
    return h;
  }

  /** Parses a file's text: lines end with a newline; a last line without one is ignored. */
  public static History ofText(String text) {
    History h = new History();
    h.addText("text", text);
    return h;
  }

  private void addText(String source, String text) {
    String[] parts = text.split("\n", -1);
    // the last element is what follows the last newline: empty, or a line cut by a kill
    for (int i = 0; i < parts.length - 1; i++) {
      if (!parts[i].isEmpty()) {
        add(source, i + 1, parts[i]);
      }
    }
    if (!parts[parts.length - 1].isEmpty()) {
      cutLines++;
    }
  }

  private void add(String source, int lineNumber, String line) {
    String[] f = line.split(" ");
    try {
      switch (f[0]) {
        case "G" -> {
          need(f, 8);
          Grant g =
              new Grant(
                  f[1],
                  f[2],
                  f[3],
                  f[4],
                  Long.parseLong(f[5]),
                  Long.parseLong(f[6]),
                  Long.parseLong(f[7]));
          grants.add(g);
        }
        case "W" -> {
          need(f, 7);
          Work w = new Work(f[1], f[2], f[3], Long.parseLong(f[4]), f[5], Long.parseLong(f[6]));
          works.add(w);
          workByToken.put(w.token(), w);
        }
        case "R" -> {
          need(f, 9);
          Release r =
              new Release(
                  f[1],
                  f[2],
                  f[3],
                  Long.parseLong(f[4]),
                  Long.parseLong(f[5]),
                  Integer.parseInt(f[6]),
                  Integer.parseInt(f[7]),
                  Integer.parseInt(f[8]));
          releases.add(r);
          releaseByToken.put(r.token(), r);
        }
        case "F" -> {
          need(f, 6);
          failures.add(new Failure(f[1], f[2], f[3], Long.parseLong(f[4]), f[5]));
        }
        case "H" -> {
          need(f, 5);
          health.add(new HealthSample(f[1], Long.parseLong(f[2]), f[3], f[4]));
        }
        case "S" -> {
          need(f, 4);
          marks.add(new Mark("S", f[1], Long.parseLong(f[3]), f[2]));
        }
        case "L" -> {
          need(f, 5);
          marks.add(new Mark("L", f[1], Long.parseLong(f[4]), f[2] + " " + f[3]));
        }
        case "E" -> {
          need(f, 5);
          marks.add(new Mark("E", f[1], Long.parseLong(f[3]), f[2] + " " + f[4]));
        }
        case "D" -> {
          need(f, 3);
          marks.add(new Mark("D", f[1], Long.parseLong(f[2]), ""));
        }
        default -> throw new IllegalArgumentException("unknown event kind");
      }
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          source + " line " + lineNumber + " does not parse (" + e.getMessage() + "): " + line, e);
    }
  }

  private static void need(String[] fields, int n) {
    if (fields.length != n) {
      throw new IllegalArgumentException("expected " + n + " fields, got " + fields.length);
    }
  }

  /** Every grant, in file order. */
  public List<Grant> grants() {
    return grants;
  }

  /** Every finished read-modify-write. */
  public List<Work> works() {
    return works;
  }

  /** Every release. */
  public List<Release> releases() {
    return releases;
  }

  /** Every failed acquisition. */
  public List<Failure> failures() {
    return failures;
  }

  /** Every health sample. */
  public List<HealthSample> health() {
    return health;
  }

  /** Every other mark (S, L, E, D). */
  public List<Mark> marks() {
    return marks;
  }

  /** The marks of one kind. */
  public List<Mark> marks(String kind) {
    return marks.stream().filter(m -> m.kind().equals(kind)).toList();
  }

  /** The release of the lease with {@code token}, if it was released. */
  public Optional<Release> releaseOf(String token) {
    return Optional.ofNullable(releaseByToken.get(token));
  }

  /** The read-modify-write done under the lease with {@code token}, if it finished. */
  public Optional<Work> workOf(String token) {
    return Optional.ofNullable(workByToken.get(token));
  }

  /** How many files ended in a line cut short (a client killed while writing it). */
  public int cutLines() {
    return cutLines;
  }
}
