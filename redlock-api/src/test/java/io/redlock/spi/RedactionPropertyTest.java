package io.redlock.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * For every password with awkward characters and every URI shape, valid or malformed, no piece of
 * the password (two characters or more) appears in anything that can print the URI: {@link
 * NodeUri#redacted()}, {@link NodeUri#redact}, the errors of {@link NodeUri#parse} and of {@link
 * LockNodes}. The passwords are made of letters that no message or URI part uses next to each other
 * (Q, X, Z, J), so any leak shows.
 */
class RedactionPropertyTest {

  /** Passwords with the characters that break URI parsing, written unencoded. */
  static final List<String> PASSWORDS =
      List.of(
          "QX@ZJ",
          "QX@@ZJ",
          "QX ZJ",
          "QX/ZJ",
          "QX?ZJ",
          "QX#ZJ",
          "QX:ZJ",
          "QX%ZJ",
          "QX,ZJ",
          "QX;ZJ",
          "QX&ZJ",
          "QX'ZJ",
          "QX=ZJ",
          "QX\\ZJ",
          "QX[Z]J",
          "QX]:ZJ",
          "Q@X:Z/J?QX#ZJ Q@Z",
          "QX@ZJ.QX:Q/ZJ");

  /**
   * {P}: the password as written, unencoded; {E}: percent-encoded as it should be. (A password
   * alone where the user goes, redis://{P}@h, is a user name here; the Redis backend, which reads
   * it as a password, hides it and has its own test.)
   */
  static final List<String> SHAPES =
      List.of(
          "redis://:{P}@127.0.0.1:18104",
          "redis://locks:{P}@127.0.0.1:18104/0",
          "rediss://locks:{P}@h.example:6380",
          "redis://:{P}@",
          "redis://:{P}@/0",
          "redis://:{P}@127.0.0.1:notaport",
          "redis://:{P}@127.0.0.1:99999",
          "redis://:{P}",
          "redis://127.0.0.1:6379?password={E}",
          "redis://127.0.0.1:6379/0?user=u&password={E}&poolSize=2",
          "postgresql://locks:{P}@h/db",
          "postgresql://locks:{P}@h:5432/db?sslmode=disable",
          "postgres://locks:{P}@/db",
          "postgresql://locks:{P}@h:bad/db",
          "postgresql://h/db?user=locks&password={E}",
          "postgresql://h/db?sslpassword={E}",
          "jdbc:postgresql://h:5432/db?user=locks&password={E}",
          "jdbc:postgresql://h/db?sslpassword={E}&password={E}&ssl=true",
          "jdbc:postgresql://locks:{P}@h/db",
          "jdbc:mariadb://locks:{P}@h:3306/db",
          "jdbc:mariadb://h:3306/db?user=locks&password={E}",
          "jdbc:mariadb://h:notaport/db?password={E}",
          "jdbc:h2:tcp://h/db;USER=sa;PASSWORD={E}",
          "mongodb://locks:{P}@h:27017/db?authSource=admin",
          "mongodb://locks:{P}@a:27017,b:27018/db",
          "mongodb://locks:{P}@h:nope/db",
          "mongodb+srv://locks:{P}@cluster.example/db",
          "mongodb://h/db?tlsCertificateKeyFilePassword={E}&w=majority",
          "mongodb://h/db?authMechanismProperties=AWS_SESSION_TOKEN:{E}",
          "test-mem://u:{P}@host/x",
          "//u:{P}@host:6379",
          "{P}@host:6379");

  /**
   * Every URI to try for {@code password}: each shape, plus the same with the password raw in the
   * query where that is unambiguous, plus the pieces a list split at commas and white space gives
   * (as REDLOCK_NODES and the command line split it).
   */
  static List<String> uris(String password) {
    Set<String> out = new LinkedHashSet<>();
    String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8);
    boolean hasAt = password.contains("@");
    for (String shape : SHAPES) {
      if (hasAt && shape.endsWith("{P}")) {
        continue; // redis://:QX@ZJ is a well-formed URI of host ZJ: nothing tells it apart
      }
      out.add(shape.replace("{P}", password).replace("{E}", encoded));
      if (shape.contains("{E}") && !password.matches(".*[&;\\s].*")) {
        out.add(shape.replace("{E}", password));
      }
    }
    // A list split inside a password yields pieces such as redis://:QX (caught: "QX" is no port)
    // but also well-formed URIs that name another host: redis://QX of redis://QX ZJ@h (the
    // password where the user goes), redis://:Q@X of redis://:Q@X ZJ@h, or a bare word (ZJ of
    // redis://:QX ZJ, which lacks its @host). Those are not tried.
    for (String shape : SHAPES) {
      if (hasAt || shape.contains("//{P}") || shape.startsWith("{P}") || shape.endsWith("{P}")) {
        continue;
      }
      String uri = shape.replace("{P}", password).replace("{E}", encoded);
      for (String piece : uri.split("[,\\s]+")) {
        if (!piece.isEmpty()) {
          out.add(piece);
        }
      }
    }
    return List.copyOf(out);
  }

  @Test
  @DisplayName("no piece of a password shows, whatever the shape of the URI")
  void noPieceOfAPasswordShows() {
    LockNodes none = LockNodes.of(List.of());
    LockNodes careless = LockNodes.of(List.of(new CarelessProvider()));
    int checked = 0;
    for (String password : PASSWORDS) {
      for (String uri : uris(password)) {
        List<String> seen = new ArrayList<>();
        if (uri.contains("//")) {
          // in running text only '//' marks a URI: a bare user:password@host is text as well
          seen.add(NodeUri.redact(uri));
          seen.add(NodeUri.redact("node '" + uri + "' failed: connection refused"));
          seen.add(NodeUri.redact("nodes " + uri + ", redis://other:6379 and " + uri + "."));
        }
        seen.add(NodeUri.redactUri(uri));
        collect(seen, () -> NodeUri.parse(uri).redacted());
        collect(seen, () -> NodeUri.parse(uri).toString());
        collect(seen, () -> LockNodes.parseAll(List.of(uri)));
        collect(seen, () -> LockNodes.parseAll(List.of(uri, " " + uri)));
        collect(seen, () -> none.open(uri));
        collect(seen, () -> careless.open(uri));
        collect(seen, () -> careless.openAll(List.of("redis://h:1", uri)));
        for (String message : seen) {
          assertNoPiece(password, uri, message);
          checked++;
        }
      }
    }
    assertThat(checked).isGreaterThan(PASSWORDS.size() * SHAPES.size() * 10);
  }

  /** Runs {@code action}, adding its result or every message and toString of what it threw. */
  static void collect(List<String> seen, Supplier<?> action) {
    try {
      seen.add(String.valueOf(action.get()));
    } catch (RuntimeException e) {
      seen.addAll(messages(e));
    }
  }

  /** The message and toString of {@code e}, its causes and suppressed exceptions. */
  static List<String> messages(Throwable e) {
    List<String> out = new ArrayList<>();
    Set<Throwable> visited = Collections.newSetFromMap(new IdentityHashMap<>());
    List<Throwable> todo = new ArrayList<>(List.of(e));
    while (!todo.isEmpty()) {
      Throwable t = todo.remove(todo.size() - 1);
      if (t == null || !visited.add(t)) {
        continue;
      }
      out.add(String.valueOf(t.getMessage()));
      out.add(t.toString());
      todo.add(t.getCause());
      todo.addAll(List.of(t.getSuppressed()));
    }
    return out;
  }

  static void assertNoPiece(String password, String uri, String message) {
    for (int length = 2; length <= password.length(); length++) {
      for (int i = 0; i + length <= password.length(); i++) {
        String piece = password.substring(i, i + length);
        assertThat(message)
            .as("password '%s', URI '%s': '%s' shows in: %s", password, uri, piece, message)
            .doesNotContain(piece);
      }
    }
  }

  /** Claims every scheme used above and fails with the raw URI, as a careless backend might. */
  static final class CarelessProvider implements LockNodeProvider {
    @Override
    public Set<String> schemes() {
      return Set.of(
          "redis",
          "rediss",
          "postgresql",
          "postgres",
          "jdbc:postgresql",
          "jdbc:mariadb",
          "jdbc:h2",
          "mongodb",
          "mongodb+srv",
          "test-mem");
    }

    @Override
    public LockNode open(NodeUri uri) {
      throw new IllegalStateException(
          "cannot connect to " + uri.raw(), new RuntimeException("while opening " + uri.raw()));
    }
  }
}
