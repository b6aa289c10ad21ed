package io.redlock.tck;

import java.util.Comparator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.MethodDescriptor;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.MethodOrdererContext;

/** Runs the rules in the order of their numbers: R0.1, R0.2, R1.1, ... R17.3. */
final class ByRule implements MethodOrderer {
  private static final Pattern NUMBER = Pattern.compile("^r(\\d+)_(\\d+)_");

  @Override
  public void orderMethods(MethodOrdererContext context) {
    context
        .getMethodDescriptors()
        .sort(
            Comparator.comparingLong(ByRule::rank).thenComparing(MethodDescriptor::getDisplayName));
  }

  private static long rank(MethodDescriptor method) {
    Matcher m = NUMBER.matcher(method.getMethod().getName());
    return m.find()
        ? Long.parseLong(m.group(1)) * 1000 + Long.parseLong(m.group(2))
        : Long.MAX_VALUE;
  }
}
