package io.redlock.mongo.internal;

import com.mongodb.ErrorCategory;
import com.mongodb.MongoClientException;
import com.mongodb.MongoCommandException;
import com.mongodb.MongoConfigurationException;
import com.mongodb.MongoConnectionPoolClearedException;
import com.mongodb.MongoException;
import com.mongodb.MongoExecutionTimeoutException;
import com.mongodb.MongoIncompatibleDriverException;
import com.mongodb.MongoInterruptedException;
import com.mongodb.MongoNodeIsRecoveringException;
import com.mongodb.MongoNotPrimaryException;
import com.mongodb.MongoOperationTimeoutException;
import com.mongodb.MongoSecurityException;
import com.mongodb.MongoServerException;
import com.mongodb.MongoSocketException;
import com.mongodb.MongoSocketOpenException;
import com.mongodb.MongoSocketReadTimeoutException;
import com.mongodb.MongoTimeoutException;
import com.mongodb.MongoWriteConcernException;
import com.mongodb.MongoWriteException;
import com.mongodb.WriteConcern;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import java.util.Set;

/**
 * Translates MongoDB driver failures into the library's exceptions: transient when a retry may help
 * (unreachable, timed out, failover, write not yet confirmed), non-transient when something must be
 * changed first (credentials, privileges, write concern the deployment cannot satisfy, a server too
 * old). Every message names the node (redacted) and says what to do; driver messages are redacted
 * and shortened before they are quoted.
 */
public final class MongoErrors {
  private static final int MAX_QUOTE = 400;

  // Server error codes after which the same call may well succeed: network trouble, an election,
  // a shutdown, an exceeded time limit. From src/mongo/base/error_codes.yml.
  private static final Set<Integer> TRANSIENT_CODES =
      Set.of(
          6, // HostUnreachable
          7, // HostNotFound
          50, // MaxTimeMSExpired
          64, // WriteConcernFailed (wtimeout)
          89, // NetworkTimeout
          91, // ShutdownInProgress
          112, // WriteConflict
          189, // PrimarySteppedDown
          262, // ExceededTimeLimit
          9001, // SocketException
          10107, // NotWritablePrimary
          11600, // InterruptedAtShutdown
          11602, // InterruptedDueToReplStateChange
          13435, // NotPrimaryNoSecondaryOk
          13436 // NotPrimaryOrSecondary
          );

  private static final int UNAUTHORIZED = 13;
  private static final int AUTHENTICATION_FAILED = 18;
  private static final int UNKNOWN_REPL_WRITE_CONCERN = 79;
  private static final int UNSATISFIABLE_WRITE_CONCERN = 100;

  private MongoErrors() {}

  /** True if the failure is a duplicate {@code _id}: another live document holds the key. */
  public static boolean isDuplicateKey(RuntimeException e) {
    if (e instanceof MongoWriteException write) {
      return ErrorCategory.fromErrorCode(write.getError().getCode()) == ErrorCategory.DUPLICATE_KEY;
    }
    return e instanceof MongoCommandException command
        && ErrorCategory.fromErrorCode(command.getErrorCode()) == ErrorCategory.DUPLICATE_KEY;
  }

  /**
   * The library's exception for a driver failure.
   *
   * @param e what the driver threw
   * @param node the node's redacted name
   * @param operation what was being done, e.g. {@code "tryAcquire"}
   * @param settings the node's settings, quoted in advice
   */
  public static RedlockException translate(
      RuntimeException e, String node, String operation, MongoNodeSettings settings) {
    String what = operation + " failed: ";
    if (e instanceof RedlockException already) {
      return already;
    }
    if (e instanceof MongoSecurityException) {
      return new RedlockNonTransientException(
          node,
          what
              + "authentication failed ("
              + quote(e)
              + "); check the user name, password, authSource and authMechanism in the"
              + " connection string, and that the user exists on this deployment",
          e);
    }
    if (e instanceof MongoOperationTimeoutException) {
      return new RedlockTransientException(
          node,
          what
              + "the operation did not complete within timeoutMS ("
              + quote(e)
              + "); check that the server is up and not overloaded, or raise timeoutMS in the"
              + " connection string",
          e);
    }
    if (e instanceof MongoTimeoutException) {
      return new RedlockTransientException(
          node,
          what
              + "no usable MongoDB server within serverSelectionTimeoutMS ("
              + quote(e)
              + "); check that the server is up and reachable at this address, that a primary"
              + " exists, and the replicaSet name, or raise serverSelectionTimeoutMS",
          e);
    }
    if (e instanceof MongoSocketReadTimeoutException) {
      return new RedlockTransientException(
          node,
          what
              + "no answer within socketTimeoutMS ("
              + quote(e)
              + "); the server may be paused or overloaded, or raise socketTimeoutMS",
          e);
    }
    if (e instanceof MongoSocketOpenException) {
      return new RedlockTransientException(
          node,
          what + "could not connect (" + quote(e) + "); check that the server is up and reachable",
          e);
    }
    if (e instanceof MongoSocketException || e instanceof MongoConnectionPoolClearedException) {
      return new RedlockTransientException(
          node, what + "the connection failed (" + quote(e) + "); a retry may succeed", e);
    }
    if (e instanceof MongoExecutionTimeoutException) {
      return new RedlockTransientException(
          node, what + "the server's time limit ran out (" + quote(e) + ")", e);
    }
    if (e instanceof MongoInterruptedException) {
      Thread.currentThread().interrupt();
      return new RedlockTransientException(node, what + "the worker was interrupted", e);
    }
    if (e instanceof MongoNotPrimaryException || e instanceof MongoNodeIsRecoveringException) {
      return new RedlockTransientException(
          node,
          what
              + "the server is not a writable primary ("
              + quote(e)
              + "); during a failover this passes by itself; otherwise connect with the replica"
              + " set's seed list and replicaSet=... instead of directConnection=true to a"
              + " secondary",
          e);
    }
    if (e instanceof MongoWriteConcernException wc) {
      return writeConcern(wc, node, what, settings);
    }
    if (e instanceof MongoServerException server) {
      return serverError(server, node, what, settings);
    }
    if (e instanceof MongoIncompatibleDriverException) {
      return new RedlockNonTransientException(
          node,
          what
              + "the server's version is not supported by this driver ("
              + quote(e)
              + "); the lock node needs MongoDB 4.2 or later",
          e);
    }
    if (e instanceof MongoConfigurationException) {
      return new RedlockNonTransientException(
          node,
          what
              + "the connection string could not be resolved ("
              + quote(e)
              + "); check the host names and, for mongodb+srv://, the DNS SRV and TXT records",
          e);
    }
    if (e instanceof MongoClientException || e instanceof IllegalStateException) {
      // e.g. "state should be: open": the MongoClient was closed under us.
      return new RedlockNonTransientException(
          node,
          what
              + "the MongoDB client cannot be used ("
              + quote(e)
              + "); if you passed your own MongoClient, do not close it before the lock node",
          e);
    }
    if (e instanceof MongoException mongo
        && (mongo.hasErrorLabel(MongoException.TRANSIENT_TRANSACTION_ERROR_LABEL)
            || mongo.hasErrorLabel("RetryableWriteError"))) {
      return new RedlockTransientException(node, what + quote(e) + "; a retry may succeed", e);
    }
    return new RedlockTransientException(
        node, what + "unexpected failure: " + e.getClass().getName() + ": " + quote(e), e);
  }

  private static RedlockException writeConcern(
      MongoWriteConcernException e, String node, String what, MongoNodeSettings settings) {
    int code = e.getWriteConcernError().getCode();
    String concern = describe(settings.writeConcern());
    if (code == UNSATISFIABLE_WRITE_CONCERN || code == UNKNOWN_REPL_WRITE_CONCERN) {
      return new RedlockNonTransientException(
          node,
          what
              + "this deployment cannot satisfy the write concern "
              + concern
              + " ("
              + quote(e)
              + "); choose one it can, e.g. w=majority, or fix the replica set",
          e);
    }
    return new RedlockTransientException(
        node,
        what
            + "the write was not confirmed with write concern "
            + concern
            + " ("
            + quote(e)
            + "); the node counts as not having answered, so the lock does not rely on it",
        e);
  }

  private static RedlockException serverError(
      MongoServerException e, String node, String what, MongoNodeSettings settings) {
    int code = e.getCode();
    if (code == UNAUTHORIZED) {
      return new RedlockNonTransientException(
          node,
          what
              + "not authorized ("
              + quote(e)
              + "); grant the user the readWrite role on database '"
              + settings.database()
              + "'",
          e);
    }
    if (code == AUTHENTICATION_FAILED) {
      return new RedlockNonTransientException(
          node,
          what
              + "authentication failed ("
              + quote(e)
              + "); check the user name, password and authSource in the connection string",
          e);
    }
    if (TRANSIENT_CODES.contains(code)
        || e.hasErrorLabel("RetryableWriteError")
        || e.hasErrorLabel(MongoException.TRANSIENT_TRANSACTION_ERROR_LABEL)) {
      return new RedlockTransientException(
          node, what + "the server reported a passing problem (" + quote(e) + ")", e);
    }
    String message = String.valueOf(e.getMessage());
    if (message.contains("NOW")) {
      return new RedlockNonTransientException(
          node,
          what
              + "the server does not know $$NOW ("
              + quote(e)
              + "); the lock node needs MongoDB 4.2 or later",
          e);
    }
    return new RedlockNonTransientException(
        node,
        what
            + "the server refused the operation ("
            + quote(e)
            + "); check that collection '"
            + settings.database()
            + "."
            + settings.collection()
            + "' is used only by Redlock and has no default collation or validator",
        e);
  }

  private static String describe(WriteConcern concern) {
    Object w = concern.getWObject();
    return "{w: "
        + (w == null ? "default" : w)
        + ", journal: "
        + concern.getJournal()
        + (concern.getWTimeout(java.util.concurrent.TimeUnit.MILLISECONDS) == null
            ? ""
            : ", wtimeoutMS: " + concern.getWTimeout(java.util.concurrent.TimeUnit.MILLISECONDS))
        + "}";
  }

  /** The driver's message, redacted and shortened. */
  static String quote(Throwable e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    message = MongoUri.redact(message.replaceAll("\\s+", " ").strip());
    return message.length() <= MAX_QUOTE ? message : message.substring(0, MAX_QUOTE) + "...";
  }
}
