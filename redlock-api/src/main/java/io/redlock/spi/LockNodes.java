package io.redlock.spi;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Opens {@link LockNode}s from URIs through the {@link LockNodeProvider}s found by {@link
 * ServiceLoader}. A provider that cannot be loaded or declares bad schemes is set aside and
 * reported by {@link #problems()}; a scheme with no provider is an error listing the available
 * schemes and the module to add; a scheme claimed twice is an error naming both providers. Messages
 * show URIs {@link NodeUri#redacted() redacted}. An instance is an immutable snapshot, safe to
 * share.
 */
public final class LockNodes {
  private static final System.Logger LOG = System.getLogger(LockNodes.class.getName());
  private static final String VALID_SCHEME = "[a-z][a-z0-9+.-]*|jdbc:[a-z0-9][a-z0-9+._-]*";
  private static final String JDBC = "io.redlock:redlock-backend-jdbc (with the driver ";

  /** The module of this project that provides each scheme, for the "add ..." hint. */
  private static final Map<String, String> KNOWN_MODULES = new TreeMap<>();

  static {
    for (String line :
        List.of(
            "redis rediss=io.redlock:redlock-backend-redis",
            "postgresql postgres=io.redlock:redlock-backend-postgres",
            "mongodb mongodb+srv=io.redlock:redlock-backend-mongo",
            "jdbc:postgresql=" + JDBC + "org.postgresql:postgresql)",
            "jdbc:mariadb jdbc:mysql=" + JDBC + "org.mariadb.jdbc:mariadb-java-client)",
            "jdbc:sqlite=" + JDBC + "org.xerial:sqlite-jdbc)",
            "jdbc:h2=" + JDBC + "com.h2database:h2)")) {
      String[] schemesAndModule = line.split("=", 2);
      for (String scheme : schemesAndModule[0].split(" ")) {
        KNOWN_MODULES.put(scheme, schemesAndModule[1]);
      }
    }
  }

  private final Map<String, List<LockNodeProvider>> byScheme = new TreeMap<>();
  private final List<String> problems = new ArrayList<>();
  private final Set<Class<?>> seen = new HashSet<>();

  private LockNodes() {}

  /** The providers visible from the thread's context class loader and from this API's loader. */
  public static LockNodes discover() {
    return scan(
        Stream.of(Thread.currentThread().getContextClassLoader(), LockNodes.class.getClassLoader())
            .filter(Objects::nonNull)
            .distinct()
            .toList());
  }

  /** The providers visible from {@code loader}, and only those. */
  public static LockNodes load(ClassLoader loader) {
    return scan(List.of(Objects.requireNonNull(loader, "loader")));
  }

  /** A fixed set of providers, without {@link ServiceLoader}: for tests and embedding. */
  public static LockNodes of(Collection<? extends LockNodeProvider> providers) {
    LockNodes nodes = new LockNodes();
    int position = 0;
    for (LockNodeProvider provider : providers) {
      if (provider == null) {
        throw new NullPointerException(
            "provider #" + (position + 1) + " of " + providers.size() + " is null; leave it out");
      }
      position++;
      nodes.add(provider);
    }
    return nodes.seal();
  }

  private static LockNodes scan(List<ClassLoader> loaders) {
    LockNodes nodes = new LockNodes();
    for (ClassLoader loader :
        loaders.isEmpty() ? List.of(ClassLoader.getSystemClassLoader()) : loaders) {
      Iterator<LockNodeProvider> it = ServiceLoader.load(LockNodeProvider.class, loader).iterator();
      // a broken entry (missing class, failing constructor) is set aside; the iterator moves on
      for (int i = 0; i < 1_000; i++) {
        try {
          if (!it.hasNext()) {
            break;
          }
          nodes.add(it.next());
        } catch (ServiceConfigurationError | LinkageError e) {
          nodes.problem("a LockNodeProvider could not be loaded: " + describe(e), e);
        }
      }
    }
    return nodes.seal();
  }

  private void add(LockNodeProvider provider) {
    String name = provider.getClass().getName();
    if (!seen.add(provider.getClass())) {
      return; // the same class seen through two class loaders
    }
    Set<String> schemes;
    try {
      schemes = provider.schemes();
    } catch (RuntimeException | LinkageError e) {
      problem(name + ".schemes() failed: " + describe(e), e);
      return;
    }
    if (schemes == null || schemes.isEmpty()) {
      problem(name + " declares no schemes", null);
      return;
    }
    List<String> invalid =
        schemes.stream().filter(s -> s == null || !s.matches(VALID_SCHEME)).toList();
    if (!invalid.isEmpty()) {
      problem(
          name
              + " declares invalid schemes "
              + invalid
              + "; a scheme is written as NodeUri.scheme() reports it, lower case and without"
              + " '://', e.g. \"redis\" or \"jdbc:postgresql\"",
          null);
      return;
    }
    schemes.forEach(s -> byScheme.computeIfAbsent(s, k -> new ArrayList<>(1)).add(provider));
  }

  private void problem(String message, Throwable cause) {
    if (problems.contains(message)) {
      return; // the same provider seen from a loader and its parent
    }
    problems.add(message);
    LOG.log(Level.WARNING, "redlock: " + message + " (ignoring it; other backends still work)");
    if (cause != null) {
      LOG.log(Level.DEBUG, "redlock: provider failure", cause);
    }
  }

  private LockNodes seal() {
    byScheme.forEach(
        (scheme, providers) -> {
          if (providers.size() > 1) {
            problems.add(duplicateMessage(scheme, providers));
          }
        });
    return this;
  }

  private static String describe(Throwable e) {
    StringBuilder out = new StringBuilder(NodeUri.redact(String.valueOf(e)));
    Set<Throwable> seen = new HashSet<>(Set.of(e));
    for (Throwable c = e.getCause(); c != null && seen.add(c); c = c.getCause()) {
      out.append("; caused by ").append(NodeUri.redact(String.valueOf(c)));
    }
    return out.toString();
  }

  /**
   * {@code e} and its causes with redacted messages and their stack traces: one may quote a URI.
   */
  private static Throwable redactedCopy(Throwable e, int depth) {
    if (e == null || depth > 20) {
      return null;
    }
    RuntimeException copy =
        new RuntimeException(
            NodeUri.redact(String.valueOf(e)), redactedCopy(e.getCause(), depth + 1)) {
          @Override
          public String toString() {
            return getMessage();
          }
        };
    copy.setStackTrace(e.getStackTrace());
    for (Throwable suppressed : e.getSuppressed()) {
      copy.addSuppressed(redactedCopy(suppressed, depth + 1));
    }
    return copy;
  }

  /** Every scheme some provider claims, sorted. */
  public SortedSet<String> schemes() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(byScheme.keySet()));
  }

  /** Providers set aside and schemes claimed twice, as messages safe to print. */
  public List<String> problems() {
    return Collections.unmodifiableList(problems);
  }

  /**
   * The one provider for the URI's scheme.
   *
   * @throws RedlockNonTransientException if no provider or more than one claims the scheme
   */
  public LockNodeProvider providerFor(NodeUri uri) {
    List<LockNodeProvider> candidates = byScheme.getOrDefault(uri.scheme(), List.of());
    if (candidates.size() == 1) {
      return candidates.get(0);
    }
    throw new RedlockNonTransientException(
        uri.redacted(),
        candidates.isEmpty() ? noProviderMessage(uri) : duplicateMessage(uri.scheme(), candidates),
        null);
  }

  private String noProviderMessage(NodeUri uri) {
    String scheme = uri.scheme();
    String shown = uri.redacted();
    String module = KNOWN_MODULES.get(scheme);
    StringBuilder m = new StringBuilder("no backend for scheme '").append(scheme).append("'. ");
    if (shown.matches("[A-Za-z0-9.-]+:\\d+(/.*)?")) {
      m.append(
          "'" + shown + "' looks like host:port without a scheme; write e.g. redis://" + shown);
    } else if (module != null) {
      m.append("Add ").append(module).append(" to the class path for ").append(hint(scheme));
    } else {
      m.append("No module of this project provides '" + scheme + "'; a third-party backend")
          .append(" registers an io.redlock.spi.LockNodeProvider in")
          .append(" META-INF/services/io.redlock.spi.LockNodeProvider");
      Set<String> known = new TreeSet<>(KNOWN_MODULES.keySet());
      known.addAll(byScheme.keySet());
      known.stream()
          .filter(k -> distance(scheme, k) < 3)
          .min((a, b) -> distance(scheme, a) - distance(scheme, b))
          .ifPresent(near -> m.append(" (did you mean ").append(hint(near)).append("?)"));
    }
    m.append(". Schemes available: ")
        .append(
            byScheme.isEmpty()
                ? "none (no io.redlock.spi.LockNodeProvider on the class path)"
                : String.join(", ", byScheme.keySet()));
    if (!problems.isEmpty()) {
      m.append(". Discovery problems: ").append(String.join("; ", problems));
    }
    return m.toString();
  }

  private static String hint(String scheme) {
    return scheme.startsWith("jdbc:") ? scheme + ":" : scheme + "://";
  }

  /** Levenshtein distance, for "did you mean". */
  private static int distance(String a, String b) {
    int[] row = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      row[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      int diagonal = row[0];
      row[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int above = row[j];
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        row[j] = Math.min(Math.min(row[j - 1] + 1, above + 1), diagonal + cost);
        diagonal = above;
      }
    }
    return row[b.length()];
  }

  private static String duplicateMessage(String scheme, List<LockNodeProvider> providers) {
    List<String> names = new ArrayList<>();
    for (LockNodeProvider p : providers) {
      var source = p.getClass().getProtectionDomain().getCodeSource();
      String origin =
          source != null && source.getLocation() != null
              ? source.getLocation().toString()
              : String.valueOf(p.getClass().getClassLoader());
      names.add(p.getClass().getName() + " (from " + origin + ")");
    }
    return "scheme '"
        + scheme
        + "' is claimed by "
        + providers.size()
        + " providers: "
        + String.join(" and ", names)
        + "; remove all but one of them from the class path";
  }

  /**
   * Opens the node for {@code uri}.
   *
   * @throws IllegalArgumentException if the URI is malformed
   * @throws RedlockException if no single provider claims the scheme or the node cannot be set up
   */
  public LockNode open(String uri) {
    return open(NodeUri.parse(uri));
  }

  /** Opens the node for {@code uri}; see {@link #open(String)}. */
  public LockNode open(NodeUri uri) {
    return open(uri, providerFor(uri));
  }

  /** Opens with a chosen provider; what a misbehaving backend throws is redacted. */
  private static LockNode open(NodeUri uri, LockNodeProvider provider) {
    String name = provider.getClass().getName();
    LockNode node;
    try {
      node = provider.open(uri);
    } catch (RedlockException | IllegalArgumentException e) {
      throw e; // the backend's own, already naming the node (redacted) and the fix
    } catch (RuntimeException | LinkageError e) {
      throw new RedlockNonTransientException(
          uri.redacted(), name + " failed to open the node: " + describe(e), redactedCopy(e, 0));
    }
    if (node == null) {
      throw new RedlockNonTransientException(uri.redacted(), name + ".open returned null", null);
    }
    return node;
  }

  /**
   * Opens one node per URI, in order, after resolving every provider; on a failure the nodes
   * already opened are closed. A URI listed twice is an error: a quorum needs independent nodes.
   *
   * @throws IllegalArgumentException for an empty list, a malformed or repeated URI
   * @throws RedlockException as {@link #open(String)}
   */
  public List<LockNode> openAll(Collection<String> uris) {
    List<NodeUri> parsed = parseAll(uris);
    List<LockNodeProvider> providers = parsed.stream().map(this::providerFor).toList();
    List<LockNode> opened = new ArrayList<>(parsed.size());
    for (int i = 0; i < parsed.size(); i++) {
      try {
        opened.add(open(parsed.get(i), providers.get(i)));
      } catch (RuntimeException | Error e) {
        closeQuietly(opened, e);
        throw e;
      }
    }
    return List.copyOf(opened);
  }

  /**
   * Parses URIs, rejecting an empty list and repeats.
   *
   * @throws IllegalArgumentException naming the bad URI (redacted)
   * @throws NullPointerException for a null URI, naming its position
   */
  public static List<NodeUri> parseAll(Collection<String> uris) {
    if (uris.isEmpty()) {
      throw new IllegalArgumentException(
          "no node URIs given; expected e.g. redis://a:6379,redis://b:6379,redis://c:6379");
    }
    List<NodeUri> parsed = new ArrayList<>(uris.size());
    for (String uri : uris) {
      if (uri == null) {
        throw new NullPointerException(
            "node URI #"
                + (parsed.size() + 1)
                + " of "
                + uris.size()
                + " is null; pass a URI such as redis://host:6379 in its place, or leave it out");
      }
      NodeUri nodeUri = NodeUri.parse(uri);
      if (parsed.contains(nodeUri)) {
        throw new IllegalArgumentException(
            "node URI '"
                + nodeUri.redacted()
                + "' is listed twice; a quorum needs independent nodes, each listed once");
      }
      parsed.add(nodeUri);
    }
    return parsed;
  }

  /** Closes {@code nodes}, adding any failure to {@code primary} as a suppressed exception. */
  public static void closeQuietly(List<? extends LockNode> nodes, Throwable primary) {
    for (LockNode node : nodes) {
      try {
        node.close();
      } catch (RuntimeException | Error closeFailure) {
        if (primary != null && primary != closeFailure) {
          primary.addSuppressed(closeFailure);
        }
      }
    }
  }
}
