package io.txbox.testkit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The per-key order oracle every test of the relay's order promise uses: fed the records read
 * back from a broker in arrival order, it counts the records that arrived after a later record of
 * their key. A repeat of a record already seen is a duplicate (at-least-once allows it, the inbox
 * absorbs it), not an order violation.
 *
 * <p>What is "later" is the caller's: an outbox id, or a sequence number a writer put in the
 * payload of strictly sequential transactions.
 */
public final class KeyOrder {
  private final Map<String, Long> highest = new HashMap<>();
  private final Set<String> seen = new HashSet<>();
  private final List<String> violations = new ArrayList<>();
  private long records;
  private long duplicates;

  /** Feeds one record in arrival order: its routing key and its place in the key's order. */
  public KeyOrder add(String key, long sequence) {
    Objects.requireNonNull(key, "key");
    records++;
    if (!seen.add(key + '\u0000' + sequence)) {
      duplicates++;
      return this;
    }
    Long before = highest.get(key);
    if (before != null && before > sequence) {
      violations.add("key " + key + ": " + sequence + " arrived after " + before);
    } else {
      highest.put(key, sequence);
    }
    return this;
  }

  /** Feeds {@code key:sequence} payloads, the shape most tests write. */
  public static KeyOrder ofPayloads(List<String> payloads) {
    KeyOrder order = new KeyOrder();
    for (String p : payloads) {
      int colon = p.lastIndexOf(':');
      if (colon < 0) {
        throw new IllegalArgumentException("not a key:sequence payload: " + p);
      }
      order.add(p.substring(0, colon), Long.parseLong(p.substring(colon + 1)));
    }
    return order;
  }

  /** Feeds records of one key per map entry, each list in arrival order. */
  public static KeyOrder ofArrivals(Map<String, ? extends List<? extends Number>> byKey) {
    KeyOrder order = new KeyOrder();
    byKey.forEach((key, values) -> values.forEach(v -> order.add(key, v.longValue())));
    return order;
  }

  /** Records that arrived after a later record of their key, each described. */
  public List<String> violations() {
    return List.copyOf(violations);
  }

  /** How many records arrived after a later record of their key. */
  public int violationCount() {
    return violations.size();
  }

  /** Records fed, repeats included. */
  public long records() {
    return records;
  }

  /** Repeats of a record already seen. */
  public long duplicates() {
    return duplicates;
  }

  /** Distinct records seen. */
  public int distinct() {
    return seen.size();
  }

  @Override
  public String toString() {
    return records + " records, " + duplicates + " duplicates, " + violations.size() + " order violations"
        + (violations.isEmpty() ? "" : ": " + violations.subList(0, Math.min(10, violations.size())));
  }
}
