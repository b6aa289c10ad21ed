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
import com.mongodb.client.MongoCollection;
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

  // Server error codes after which the same call may well succeed (src/mongo/base/error_codes.yml):
  // HostUnreachable, HostNotFound, MaxTimeMSExpired, WriteConcernFailed (wtimeout), NetworkTimeout,
  // ShutdownInProgress, WriteConflict, PrimarySteppedDown, ExceededTimeLimit, SocketException,
  // NotWritablePrimary, InterruptedAtShutdown, InterruptedDueToReplStateChange,
  // NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary.
  private static final Set<Integer> TRANSIENT_CODES =
      Set.of(6, 7, 50, 64, 89, 91, 112, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436);

  private static final int UNAUTHORIZED = 13;
  private static final int AUTHENTICATION_FAILED = 18;
  private static final int UNKNOWN_REPL_WRITE_CONCERN = 79;
  private static final int UNSATISFIABLE_WRITE_CONCERN = 100;

  private MongoErrors() {}

  /** True if the failure is a duplicate {@code _id}: another live document holds the key. */
  public static boolean isDuplicateKey(RuntimeException e) {
    int code =
        e instanceof MongoWriteException write
            ? write.getError().getCode()
            : e instanceof MongoCommandException command ? command.getErrorCode() : 0;
    return ErrorCategory.fromErrorCode(code) == ErrorCategory.DUPLICATE_KEY;
  }

  /**
   * The library's exception for a driver failure.
   *
   * @param e what the driver threw
   * @param node the node's redacted name
   * @param operation what was being done, e.g. {@code "tryAcquire"}
   * @param locks the lock collection, whose namespace and write concern are quoted in advice
   */
  public static RedlockException translate(
      RuntimeException e, String node, String operation, MongoCollection<?> locks) {
    if (e instanceof RedlockException already) {
      return already;
    }
    if (e instanceof MongoInterruptedException) {
      Thread.currentThread().interrupt();
    }
    String message = operation + " failed: " + explain(e, "(" + quote(e) + ")", locks);
    return isTransient(e)
        ? new RedlockTransientException(node, message, e)
        : new RedlockNonTransientException(node, message, e);
  }

  /** Whether a retry may help: the server or the network may get better by itself. */
  private static boolean isTransient(RuntimeException e) {
    int code = e instanceof MongoServerException server ? server.getCode() : 0;
    if (e instanceof MongoWriteConcernException) {
      return code != UNSATISFIABLE_WRITE_CONCERN && code != UNKNOWN_REPL_WRITE_CONCERN;
    }
    if (e instanceof MongoServerException
        && !(e instanceof MongoNotPrimaryException
            || e instanceof MongoNodeIsRecoveringException)) {
      return TRANSIENT_CODES.contains(code)
          || e instanceof MongoExecutionTimeoutException
          || retryable(e);
    }
    return !(e instanceof MongoSecurityException
        || e instanceof MongoIncompatibleDriverException
        || e instanceof MongoConfigurationException
        || (e instanceof MongoClientException
            && !(e instanceof MongoTimeoutException
                || e instanceof MongoConnectionPoolClearedException))
        || e instanceof IllegalStateException);
  }

  /** What happened, with the driver's {@code quoted} message, and what to do about it. */
  private static String explain(RuntimeException e, String quoted, MongoCollection<?> locks) {
    int code = e instanceof MongoServerException server ? server.getCode() : 0;
    if (e instanceof MongoSecurityException || code == AUTHENTICATION_FAILED) {
      return "authentication failed "
          + quoted
          + "; check the user name, password, authSource and authMechanism in the connection"
          + " string, and that the user exists on this deployment";
    }
    if (e instanceof MongoOperationTimeoutException) {
      return "the operation did not complete within timeoutMS "
          + quoted
          + "; check that the server is up and not overloaded, or raise timeoutMS in the"
          + " connection string";
    }
    if (e instanceof MongoTimeoutException) {
      return "no usable MongoDB server within serverSelectionTimeoutMS "
          + quoted
          + "; check that the server is up and reachable at this address, that a primary"
          + " exists, and the replicaSet name, or raise serverSelectionTimeoutMS";
    }
    if (e instanceof MongoSocketReadTimeoutException) {
      return "no answer within socketTimeoutMS "
          + quoted
          + "; the server may be paused or overloaded, or raise socketTimeoutMS";
    }
    if (e instanceof MongoSocketOpenException) {
      return "could not connect " + quoted + "; check that the server is up and reachable";
    }
    if (e instanceof MongoSocketException || e instanceof MongoConnectionPoolClearedException) {
      return "the connection failed " + quoted + "; a retry may succeed";
    }
    if (e instanceof MongoInterruptedException) {
      return "the worker was interrupted";
    }
    if (e instanceof MongoNotPrimaryException || e instanceof MongoNodeIsRecoveringException) {
      return "the server is not a writable primary "
          + quoted
          + "; during a failover this passes by itself; otherwise connect with the replica"
          + " set's seed list and replicaSet=... instead of directConnection=true to a secondary";
    }
    String concern = MongoStatus.describe(locks.getWriteConcern());
    if (e instanceof MongoWriteConcernException) {
      return isTransient(e)
          ? "the write was not confirmed with write concern "
              + concern
              + " "
              + quoted
              + "; the node counts as not having answered, so the lock does not rely on it"
          : "this deployment cannot satisfy the write concern "
              + concern
              + " "
              + quoted
              + "; choose one it can, e.g. w=majority, or fix the replica set";
    }
    if (code == UNAUTHORIZED) {
      return "not authorized "
          + quoted
          + "; grant the user the readWrite role on database '"
          + locks.getNamespace().getDatabaseName()
          + "'";
    }
    if (e instanceof MongoServerException && isTransient(e)) {
      return "the server reported a passing problem " + quoted + "; a retry may succeed";
    }
    if (e instanceof MongoIncompatibleDriverException
        || (e instanceof MongoServerException && String.valueOf(e.getMessage()).contains("NOW"))) {
      return "the server is too old " + quoted + "; the lock node needs MongoDB 4.2 or later";
    }
    if (e instanceof MongoServerException) {
      return "the server refused the operation "
          + quoted
          + "; check that collection '"
          + locks.getNamespace().getFullName()
          + "' is used only by Redlock and has no default collation or validator";
    }
    if (e instanceof MongoConfigurationException) {
      return "the connection string could not be resolved "
          + quoted
          + "; check the host names and, for mongodb+srv://, the DNS SRV and TXT records";
    }
    if (e instanceof MongoClientException || e instanceof IllegalStateException) {
      // e.g. "state should be: open": the MongoClient was closed under us.
      return "the MongoDB client cannot be used "
          + quoted
          + "; if you passed your own MongoClient, do not close it before the lock node";
    }
    return retryable(e)
        ? quoted + "; a retry may succeed"
        : "unexpected failure: " + e.getClass().getName() + " " + quoted;
  }

  private static boolean retryable(RuntimeException e) {
    return e instanceof MongoException mongo
        && (mongo.hasErrorLabel(MongoException.TRANSIENT_TRANSACTION_ERROR_LABEL)
            || mongo.hasErrorLabel("RetryableWriteError"));
  }

  /** The driver's message, redacted and shortened. */
  static String quote(Throwable e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    message = MongoUri.redact(message.replaceAll("\\s+", " ").strip());
    return message.length() <= MAX_QUOTE ? message : message.substring(0, MAX_QUOTE) + "...";
  }
}
