package io.redlock.spi;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Opens {@link LockNode}s from URIs through the {@link LockNodeProvider}s found by {@link
 * ServiceLoader}: the one place where a scheme such as {@code redis} or {@code jdbc:postgresql}
 * becomes a backend.
 *
 * <p>Discovery is careful, in the manner of SLF4J 2's binding:
 *
 * <ul>
 *   <li>a provider that cannot be loaded (a {@link ServiceConfigurationError}, a missing class, a
 *       {@code schemes()} that throws) is set aside and reported by {@link #problems()}; the other
 *       providers still work;
 *   <li>a scheme with no provider is an error that lists the schemes that are available and the
 *       module to add;
 *   <li>a scheme claimed by two providers is an error naming both classes, never a silent pick.
 * </ul>
 *
 * <p>Every message shows URIs {@link NodeUri#redacted() redacted}. An instance is an immutable
 * snapshot of the providers found when it was made, safe to share between threads.
 *
 * <pre>{@code
 * LockNodes discovered = LockNodes.discover();
 * try (LockNode node = discovered.open("redis://localhost:6379")) { ... }
 * }</pre>
 */
public final class LockNodes {
  private static final System.Logger LOG = System.getLogger(LockNodes.class.getName());

  /** Scheme as a provider must declare it: what {@link NodeUri#scheme()} reports. */
  private static final Pattern VALID_SCHEME =
      Pattern.compile("[a-z][a-z0-9+.-]*|jdbc:[a-z0-9][a-z0-9+._-]*");

  /** host:port (or host:port/path) that NodeUri reads as scheme "host": a missing scheme. */
  private static final Pattern HOST_PORT = Pattern.compile("[A-Za-z0-9.-]+:\\d+(/.*)?");

  /** Upper bound on iterations over a ServiceLoader, in case a broken one never advances. */
  private static final int MAX_PROVIDERS = 1_000;

  /** The module that provides each scheme this project ships, for the "add ..." hint. */
  private static final Map<String, String> KNOWN_MODULES = knownModules();

  private final Map<String, List<LockNodeProvider>> byScheme;
  private final List<String> problems;

  private LockNodes(Map<String, List<LockNodeProvider>> byScheme, List<String> problems) {
    this.byScheme = byScheme;
    this.problems = problems;
  }

  /**
   * The providers visible from the thread's context class loader and from the class loader of this
   * API (so that an application server or plugin loader and a plain class path both work).
   */
  public static LockNodes discover() {
    List<ClassLoader> loaders = new ArrayList<>();
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    if (context != null) {
      loaders.add(context);
    }
    ClassLoader own = LockNodes.class.getClassLoader();
    if (own != null && !isAncestor(own, context)) {
      loaders.add(own);
    }
    if (loaders.isEmpty()) {
      loaders.add(ClassLoader.getSystemClassLoader());
    }
    return scan(loaders);
  }

  /** The providers visible from {@code loader}, and only those. */
  public static LockNodes load(ClassLoader loader) {
    return scan(List.of(Objects.requireNonNull(loader, "loader")));
  }

  /** A fixed set of providers, without {@link ServiceLoader}: for tests and embedding. */
  public static LockNodes of(Collection<? extends LockNodeProvider> providers) {
    Builder builder = new Builder();
    int position = 0;
    for (LockNodeProvider provider : providers) {
      position++;
      if (provider == null) {
        throw new NullPointerException(
            "provider #" + position + " of " + providers.size() + " is null; leave it out");
      }
      builder.add(provider);
    }
    return builder.build();
  }

  private static boolean isAncestor(ClassLoader candidate, ClassLoader of) {
    for (ClassLoader l = of; l != null; l = l.getParent()) {
      if (l == candidate) {
        return true;
      }
    }
    return false;
  }

  private static LockNodes scan(List<ClassLoader> loaders) {
    Builder builder = new Builder();
    for (ClassLoader loader : loaders) {
      Iterator<LockNodeProvider> it;
      try {
        it = ServiceLoader.load(LockNodeProvider.class, loader).iterator();
      } catch (ServiceConfigurationError e) {
        builder.broken(e);
        continue;
      }
      for (int i = 0; i < MAX_PROVIDERS; i++) {
        try {
          if (!it.hasNext()) {
            break;
          }
          builder.add(it.next());
        } catch (ServiceConfigurationError | LinkageError e) {
          // One broken provider (missing class, failing constructor) must not hide the others:
          // the ServiceLoader iterator moves on to the next entry.
          builder.broken(e);
        }
      }
    }
    return builder.build();
  }

  /** Collects providers by scheme, setting aside the ones that misbehave. */
  private static final class Builder {
    private final Map<String, List<LockNodeProvider>> byScheme = new TreeMap<>();
    private final List<String> problems = new ArrayList<>();
    private final Set<Class<?>> seen = new HashSet<>();

    void add(LockNodeProvider provider) {
      if (!seen.add(provider.getClass())) {
        return; // the same class seen through two class loaders' views
      }
      Set<String> schemes;
      try {
        schemes = provider.schemes();
      } catch (RuntimeException | LinkageError e) {
        problem(provider.getClass().getName() + ".schemes() failed: " + describe(e), e);
        return;
      }
      if (schemes == null || schemes.isEmpty()) {
        problem(provider.getClass().getName() + " declares no schemes", null);
        return;
      }
      List<String> invalid = new ArrayList<>();
      for (String scheme : schemes) {
        if (scheme == null || !VALID_SCHEME.matcher(scheme).matches()) {
          invalid.add(scheme);
        }
      }
      if (!invalid.isEmpty()) {
        problem(
            provider.getClass().getName()
                + " declares invalid schemes "
                + invalid
                + "; a scheme is written as NodeUri.scheme() reports it, lower case and without"
                + " '://', e.g. \"redis\" or \"jdbc:postgresql\"",
            null);
        return;
      }
      for (String scheme : schemes) {
        byScheme.computeIfAbsent(scheme, s -> new ArrayList<>(1)).add(provider);
      }
    }

    void broken(Throwable e) {
      problem("a LockNodeProvider could not be loaded: " + describe(e), e);
    }

    private void problem(String message, Throwable cause) {
      problems.add(message);
      LOG.log(Level.WARNING, "redlock: " + message + " (ignoring it; other backends still work)");
      if (cause != null) {
        LOG.log(Level.DEBUG, "redlock: provider failure", cause);
      }
    }

    LockNodes build() {
      Map<String, List<LockNodeProvider>> copy = new TreeMap<>();
      byScheme.forEach((k, v) -> copy.put(k, List.copyOf(v)));
      for (Map.Entry<String, List<LockNodeProvider>> e : copy.entrySet()) {
        if (e.getValue().size() > 1) {
          problems.add(duplicateMessage(e.getKey(), e.getValue()));
        }
      }
      return new LockNodes(Collections.unmodifiableMap(copy), List.copyOf(problems));
    }
  }

  private static String describe(Throwable e) {
    StringBuilder out = new StringBuilder(NodeUri.redact(String.valueOf(e)));
    Set<Throwable> seen = new HashSet<>();
    seen.add(e);
    for (Throwable c = e.getCause(); c != null && seen.add(c); c = c.getCause()) {
      out.append("; caused by ").append(NodeUri.redact(String.valueOf(c)));
    }
    return out.toString();
  }

  /**
   * {@code e} and its causes and suppressed exceptions with their messages redacted and their stack
   * traces kept: what a careless backend threw may quote the raw URI, and a cause is printed.
   */
  private static Throwable redactedCopy(Throwable e, int depth) {
    if (e == null || depth > 20) {
      return null;
    }
    Throwable copy = new RedactedThrowable(e, redactedCopy(e.getCause(), depth + 1));
    for (Throwable suppressed : e.getSuppressed()) {
      copy.addSuppressed(redactedCopy(suppressed, depth + 1));
    }
    return copy;
  }

  /** Stands in for a throwable whose message may hold a secret: its class, redacted message. */
  private static final class RedactedThrowable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RedactedThrowable(Throwable original, Throwable cause) {
      super(
          original.getMessage() == null
              ? original.getClass().getName()
              : original.getClass().getName() + ": " + NodeUri.redact(original.getMessage()),
          cause);
      setStackTrace(original.getStackTrace());
    }

    @Override
    public String toString() {
      return getMessage();
    }
  }

  /** Every scheme some provider claims, sorted. */
  public SortedSet<String> schemes() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(byScheme.keySet()));
  }

  /**
   * Providers set aside (could not be loaded, declared bad schemes) and schemes claimed twice, as
   * messages safe to print. Empty when discovery was clean.
   */
  public List<String> problems() {
    return problems;
  }

  /**
   * The one provider for the URI's scheme.
   *
   * @throws RedlockNonTransientException if no provider or more than one claims the scheme; the
   *     message lists the available schemes, or names both providers
   */
  public LockNodeProvider providerFor(NodeUri uri) {
    Objects.requireNonNull(uri, "uri");
    List<LockNodeProvider> candidates = byScheme.getOrDefault(uri.scheme(), List.of());
    if (candidates.size() == 1) {
      return candidates.get(0);
    }
    if (candidates.isEmpty()) {
      throw new RedlockNonTransientException(uri.redacted(), noProviderMessage(uri), null);
    }
    throw new RedlockNonTransientException(
        uri.redacted(), duplicateMessage(uri.scheme(), candidates), null);
  }

  private String noProviderMessage(NodeUri uri) {
    String scheme = uri.scheme();
    StringBuilder m = new StringBuilder("no backend for scheme '").append(scheme).append("'. ");
    String module = KNOWN_MODULES.get(scheme);
    if (HOST_PORT.matcher(uri.redacted()).matches()) {
      m.append("'")
          .append(uri.redacted())
          .append("' looks like host:port without a scheme; write e.g. redis://")
          .append(uri.redacted());
    } else if (module != null) {
      m.append("Add ").append(module).append(" to the class path for ").append(hint(scheme));
    } else {
      m.append("No module of this project provides '")
          .append(scheme)
          .append("'; a third-party backend registers an io.redlock.spi.LockNodeProvider in")
          .append(" META-INF/services/io.redlock.spi.LockNodeProvider");
      String near = nearest(scheme);
      if (near != null) {
        m.append(" (did you mean ").append(hint(near)).append("?)");
      }
    }
    m.append(". Schemes available: ");
    if (byScheme.isEmpty()) {
      m.append("none (no io.redlock.spi.LockNodeProvider on the class path)");
    } else {
      m.append(String.join(", ", byScheme.keySet()));
    }
    if (!problems.isEmpty()) {
      m.append(". Discovery problems: ").append(String.join("; ", problems));
    }
    return m.toString();
  }

  private static String hint(String scheme) {
    return scheme.startsWith("jdbc:") ? scheme + ":" : scheme + "://";
  }

  /** A known scheme one typo away, e.g. "reddis" -> "redis"; null if none. */
  private String nearest(String scheme) {
    Set<String> candidates = new TreeSet<>(KNOWN_MODULES.keySet());
    candidates.addAll(byScheme.keySet());
    String best = null;
    int bestDistance = 3;
    for (String c : candidates) {
      int d = distance(scheme, c);
      if (d < bestDistance) {
        best = c;
        bestDistance = d;
      }
    }
    return best;
  }

  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  private static String duplicateMessage(String scheme, List<LockNodeProvider> providers) {
    List<String> names = new ArrayList<>();
    for (LockNodeProvider p : providers) {
      Class<?> c = p.getClass();
      names.add(c.getName() + " (from " + origin(c) + ")");
    }
    return "scheme '"
        + scheme
        + "' is claimed by "
        + providers.size()
        + " providers: "
        + String.join(" and ", names)
        + "; remove all but one of them from the class path";
  }

  private static String origin(Class<?> c) {
    try {
      var source = c.getProtectionDomain().getCodeSource();
      if (source != null && source.getLocation() != null) {
        return source.getLocation().toString();
      }
    } catch (SecurityException ignored) {
      // fall through to the class loader's name
    }
    return String.valueOf(c.getClassLoader());
  }

  /**
   * Opens the node for {@code uri}.
   *
   * @throws IllegalArgumentException if the URI is malformed (message from {@link NodeUri#parse} or
   *     the backend)
   * @throws RedlockException if no single provider claims the scheme or the node cannot be set up
   */
  public LockNode open(String uri) {
    return open(NodeUri.parse(uri));
  }

  /** Opens the node for {@code uri}; see {@link #open(String)}. */
  public LockNode open(NodeUri uri) {
    return open(uri, providerFor(uri));
  }

  /**
   * Opens {@code uri} with an already chosen provider, translating what a misbehaving backend
   * throws so that no unredacted URI escapes.
   */
  static LockNode open(NodeUri uri, LockNodeProvider provider) {
    LockNode node;
    try {
      node = provider.open(uri);
    } catch (RedlockException | IllegalArgumentException e) {
      throw e; // the backend's own, already naming the node (redacted) and the fix
    } catch (RuntimeException | LinkageError e) {
      throw new RedlockNonTransientException(
          uri.redacted(),
          provider.getClass().getName() + " failed to open the node: " + describe(e),
          redactedCopy(e, 0));
    }
    if (node == null) {
      throw new RedlockNonTransientException(
          uri.redacted(), provider.getClass().getName() + ".open returned null", null);
    }
    return node;
  }

  /**
   * Opens one node per URI, in order. If one fails, the nodes already opened are closed before the
   * failure is thrown, so that nothing leaks. Every URI is parsed and resolved to its provider
   * before any node is opened, and a URI listed twice is an error: a quorum needs independent
   * nodes.
   *
   * @throws IllegalArgumentException for an empty list, a malformed or repeated URI
   * @throws RedlockException as {@link #open(String)}
   */
  public List<LockNode> openAll(Collection<String> uris) {
    List<NodeUri> parsed = parseAll(uris);
    List<LockNodeProvider> providers = new ArrayList<>(parsed.size());
    for (NodeUri uri : parsed) {
      providers.add(providerFor(uri));
    }
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
    Objects.requireNonNull(uris, "uris");
    if (uris.isEmpty()) {
      throw new IllegalArgumentException(
          "no node URIs given; expected e.g. redis://a:6379,redis://b:6379,redis://c:6379");
    }
    List<NodeUri> parsed = new ArrayList<>(uris.size());
    Set<NodeUri> unique = new HashSet<>();
    int position = 0;
    for (String uri : uris) {
      position++;
      if (uri == null) {
        throw new NullPointerException(
            "node URI #"
                + position
                + " of "
                + uris.size()
                + " is null; pass a URI such as redis://host:6379 in its place, or leave it out");
      }
      NodeUri nodeUri = NodeUri.parse(uri);
      if (!unique.add(nodeUri)) {
        throw new IllegalArgumentException(
            "node URI '"
                + nodeUri.redacted()
                + "' is listed twice; a quorum needs independent nodes, each listed once");
      }
      parsed.add(nodeUri);
    }
    return parsed;
  }

  /**
   * Closes {@code nodes}, adding any failure to {@code primary} as a suppressed exception. For
   * giving back what was opened when a later step fails.
   */
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

  private static Map<String, String> knownModules() {
    Map<String, String> m = new LinkedHashMap<>();
    String redis = "io.redlock:redlock-backend-redis";
    m.put("redis", redis);
    m.put("rediss", redis);
    String jdbc = "io.redlock:redlock-backend-jdbc";
    m.put("jdbc:postgresql", jdbc + " (with the driver org.postgresql:postgresql)");
    m.put("jdbc:mariadb", jdbc + " (with the driver org.mariadb.jdbc:mariadb-java-client)");
    m.put("jdbc:mysql", jdbc + " (with the driver org.mariadb.jdbc:mariadb-java-client)");
    m.put("jdbc:sqlite", jdbc + " (with the driver org.xerial:sqlite-jdbc)");
    m.put("jdbc:h2", jdbc + " (with the driver com.h2database:h2)");
    String postgres = "io.redlock:redlock-backend-postgres";
    m.put("postgresql", postgres);
    m.put("postgres", postgres);
    String mongo = "io.redlock:redlock-backend-mongo";
    m.put("mongodb", mongo);
    m.put("mongodb+srv", mongo);
    return Collections.unmodifiableMap(m);
  }
}
