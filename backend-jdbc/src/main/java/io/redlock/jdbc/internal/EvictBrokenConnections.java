package io.redlock.jdbc.internal;

import com.zaxxer.hikari.SQLExceptionOverride;
import io.redlock.sql.internal.SqlErrors;
import java.sql.SQLException;

/**
 * Tells the built-in pool to drop a connection that failed because it is broken, for drivers whose
 * codes HikariCP does not know (H2's "database closed" after the database restarted, for one);
 * otherwise the pool would hand out the dead connection again and again.
 */
public final class EvictBrokenConnections implements SQLExceptionOverride {
  @java.lang.Override
  public SQLExceptionOverride.Override adjudicate(SQLException e) {
    return SqlErrors.classify(e) == SqlErrors.Kind.CONNECTION
        ? SQLExceptionOverride.Override.MUST_EVICT
        : SQLExceptionOverride.Override.CONTINUE_EVICT;
  }
}
