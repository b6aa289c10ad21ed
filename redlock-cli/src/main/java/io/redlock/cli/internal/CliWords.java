package io.redlock.cli.internal;

import io.redlock.spi.NodeUri;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The library's messages give advice to Java code ({@code strictNodes(false)}, {@code
 * allowSharedServers()}); the tool's users set flags. This rewrites that advice in the tool's
 * terms, in one place, for every message the tool prints.
 */
final class CliWords {
  /**
   * A character {@link NodeUri#redact} counts as the end of a redacted value: put between an
   * already redacted {@code ***} and the quote after it, so that the quote is not read as part of
   * the value and lost.
   */
  private static final String KEEP = "\u000B";

  /**
   * Stands for the '@' of a MySQL account, {@code 'user'@'host'} in a server's message, which
   * {@link NodeUri#redact} would take for the end of a URI's user info and hide the text up to it.
   */
  private static final String AT = "\u000E";

  private CliWords() {}

  /** Java advice and what the tool says instead, applied in this order. */
  private static final String[][] ADVICE = {
    {"cannot build the Redlock: ", ""},
    {"strictNodes is on and", "--strict is on (the default) and"},
    {"strictNodes is off and", "--no-strict is given and"},
    {"build with strictNodes(false)", "run with --no-strict"},
    {"strictNodes(false)", "--no-strict"},
    {"strictNodes(true)", "--strict"},
    // the tool has no option for it: databases of one server never make a quorum here
    {" (allowSharedServers() lets a test or a demo run so)", ""},
    {", or createTable(true) on the node's builder)", ")"},
    {
      "Build with restartQuarantine(<your longest TTL>)", "Run with --quarantine <your longest TTL>"
    },
  };

  /** {@code message} with the library's Java advice put as the tool's options. */
  static String translate(String message) {
    if (message == null) {
      return null;
    }
    String out = message;
    for (String[] advice : ADVICE) {
      out = out.replace(advice[0], advice[1]);
    }
    return out;
  }

  /**
   * A message as the tool prints it: secrets redacted (keeping the quote that closes an already
   * redacted value, as in {@code '...&password=***' is listed twice}), ISO-8601 durations as people
   * write them, and Java advice as the tool's options.
   */
  static String tell(String message) {
    if (message == null) {
      return null;
    }
    String kept =
        message
            .replace("***'", "***" + KEEP + "'")
            .replace("***\"", "***" + KEEP + "\"")
            .replace("'@'", "'" + AT + "'");
    return Durations.humanize(translate(NodeUri.redact(kept).replace(KEEP, "").replace(AT, "@")));
  }

  /**
   * The messages, with a block of lines that an earlier message holds already (the DDL of a missing
   * table, the same on every node) replaced by a pointer to it: said once, not once per node.
   */
  static List<String> blocksOnce(List<String> messages) {
    Set<String> seen = new HashSet<>();
    List<String> out = new ArrayList<>();
    for (String m : messages) {
      int first = m.indexOf('\n');
      int last = m.lastIndexOf('\n');
      if (first < 0 || last <= first) {
        out.add(m);
        continue;
      }
      String block = m.substring(first + 1, last);
      out.add(
          seen.add(block)
              ? m
              : m.substring(0, first).stripTrailing()
                  + " (the statements above) "
                  + m.substring(last + 1));
    }
    return out;
  }

  /** A node's failure in the tool's words, without the node's name in front (the line names it). */
  static String nodeMessage(String name, Throwable e) {
    String m = translate(io.redlock.spi.NodeUri.redact(String.valueOf(e.getMessage())));
    return m.startsWith(name + ": ") ? m.substring(name.length() + 2) : m;
  }

  /**
   * Each node's last error, as the Redlock saw it, naming the node: why calls did not get through.
   */
  static List<String> nodeErrors(io.redlock.Redlock redlock) {
    List<String> out = new java.util.ArrayList<>();
    for (io.redlock.NodeHealth h : redlock.health()) {
      h.lastError()
          .map(io.redlock.spi.NodeUri::redact)
          .map(e -> e.startsWith(h.node()) ? e : h.node() + ": " + e)
          .ifPresent(e -> out.add(Durations.humanize(e)));
    }
    return out;
  }
}
