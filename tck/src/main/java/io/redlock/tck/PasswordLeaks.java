package io.redlock.tck;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Checks that a backend's URI parsing never shows a piece of a password: neither in what it returns
 * (settings, a node name) nor in an exception chain, whatever the URI's shape, malformed ones
 * included. For backend authors, beside the kit: call {@link #assertNoPieceShows} from a test with
 * your URI shapes and your parser.
 *
 * <p>The passwords hold the characters that break URI parsing, unencoded, and are made of letters
 * (Q, X, Z, J) that no message or URI part uses next to each other, so any leak of two characters
 * or more shows.
 */
public final class PasswordLeaks {
  /** Passwords with awkward characters, as a user would write them, unencoded. */
  public static final List<String> PASSWORDS =
      List.of(
          "QX@ZJ",
          "QX ZJ",
          "QX/ZJ",
          "QX?ZJ",
          "QX#ZJ",
          "QX:ZJ",
          "QX%ZJ",
          "QX,ZJ",
          "QX&ZJ",
          "QX'ZJ",
          "QX[Z]J",
          "Q@X:Z/J?QX#ZJ Q@Z");

  private PasswordLeaks() {}

  /**
   * For every password and every shape, builds the URI ({@code {P}} in a shape is the password as
   * written, {@code {E}} percent-encoded), parses it, and fails naming the URI if any piece of the
   * password of two characters or more shows in the result's {@code toString} or in any message of
   * the exception chain.
   *
   * @param shapes URI templates, valid and malformed
   * @param parse the backend's parser; returns what it would show (settings, a name), or throws
   * @return how many URIs were checked
   * @throws AssertionError naming the URI and what showed
   */
  public static int assertNoPieceShows(List<String> shapes, Function<String, Object> parse) {
    int checked = 0;
    for (String password : PASSWORDS) {
      String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8);
      for (String shape : shapes) {
        if (shape.contains("//{P}@") && password.contains(":")) {
          continue; // scheme://QX:ZJ@h is the user QX with the password ZJ: not a leak to test
        }
        String uri = shape.replace("{P}", password).replace("{E}", encoded);
        List<String> seen = new ArrayList<>();
        try {
          seen.add(String.valueOf(parse.apply(uri)));
        } catch (RuntimeException e) {
          for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            seen.add(t.toString());
          }
        }
        for (String message : seen) {
          for (int n = 2; n <= password.length(); n++) {
            for (int i = 0; i + n <= password.length(); i++) {
              if (message.contains(password.substring(i, i + n))) {
                throw new AssertionError(
                    "a piece of the password ('"
                        + password.substring(i, i + n)
                        + "') shows for the URI shape '"
                        + shape
                        + "': "
                        + message);
              }
            }
          }
        }
        checked++;
      }
    }
    return checked;
  }
}
