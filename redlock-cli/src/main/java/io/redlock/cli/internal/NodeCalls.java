package io.redlock.cli.internal;

import io.redlock.spi.LockNode;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The calls the tool makes to the nodes directly, where the engine has no call of its own: reading
 * a key's holder ({@code status}, {@code unlock}) and deleting a key by a token no lease of this
 * process holds ({@code unlock}, {@code release} of a token that no majority holds). Every node is
 * asked at once and awaited against one deadline; a reply not awaited is abandoned.
 */
final class NodeCalls {
  private NodeCalls() {}

  /**
   * One node's answer.
   *
   * @param asked false where the call returned no reply: nothing to ask that node
   * @param error why there is no answer, in the tool's words, without the node's name in front
   */
  record Answer<T>(String node, boolean asked, T value, String error) {
    boolean answered() {
      return error == null;
    }
  }

  /**
   * Sends {@code call(i)} to every node {@code i} at once (a null reply: nothing to ask it), and
   * awaits the replies within {@code timeout} in all.
   */
  static <T> List<Answer<T>> all(
      List<LockNode> nodes, IntFunction<Reply<T>> call, Duration timeout) {
    List<Reply<T>> replies = new ArrayList<>();
    List<String> early = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      try {
        replies.add(call.apply(i));
        early.add(null);
      } catch (RuntimeException e) {
        replies.add(null);
        early.add(CliWords.nodeMessage(NodeUri.redact(nodes.get(i).name()), e));
      }
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    List<Answer<T>> answers = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      String name = NodeUri.redact(nodes.get(i).name());
      Reply<T> reply = replies.get(i);
      if (reply == null) {
        answers.add(new Answer<>(name, early.get(i) != null, null, early.get(i)));
        continue;
      }
      try {
        T value = reply.await(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        answers.add(new Answer<>(name, true, value, null));
      } catch (RuntimeException e) {
        reply.abandon(late -> {});
        answers.add(new Answer<>(name, true, null, CliWords.nodeMessage(name, e)));
      }
    }
    return answers;
  }
}
