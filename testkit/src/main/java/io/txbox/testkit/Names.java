package io.txbox.testkit;

import java.security.SecureRandom;
import java.util.Locale;
import java.util.regex.Pattern;

/** Unique, valid names for schemas, topics, queues and exchanges. */
final class Names {
  /** PostgreSQL truncates identifiers longer than this (NAMEDATALEN - 1). */
  static final int MAX_PG_IDENTIFIER = 63;

  private static final int SUFFIX_LENGTH = 8;
  private static final Pattern NON_IDENTIFIER = Pattern.compile("[^a-z0-9_]+");
  private static final Pattern NON_TOPIC = Pattern.compile("[^a-zA-Z0-9._-]+");
  private static final char[] ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz".toCharArray();
  // Secure so that two JVMs started in the same millisecond still pick different names.
  private static final SecureRandom RANDOM = new SecureRandom();

  private Names() {}

  /**
   * Returns {@code t_<hint>_<random>}, lower case, made of {@code [a-z0-9_]} and at most 63
   * characters, so it needs no quoting in SQL.
   */
  static String schemaName(String hint) {
    String base = NON_IDENTIFIER.matcher(hint.toLowerCase(Locale.ROOT)).replaceAll("_");
    base = trimUnderscores(base);
    if (base.isEmpty()) {
      base = "x";
    }
    int room = MAX_PG_IDENTIFIER - "t_".length() - 1 - SUFFIX_LENGTH;
    if (base.length() > room) {
      base = trimUnderscores(base.substring(0, room));
    }
    return "t_" + base + "_" + randomSuffix(SUFFIX_LENGTH);
  }

  /** Returns a short lower-case id for a test class: {@code <simple-name>-<random>}. */
  static String classId(Class<?> testClass) {
    String base = NON_IDENTIFIER.matcher(testClass.getSimpleName().toLowerCase(Locale.ROOT))
        .replaceAll("");
    if (base.length() > 32) {
      base = base.substring(0, 32);
    }
    if (base.isEmpty()) {
      base = "test";
    }
    return base + "-" + randomSuffix(6);
  }

  /** Returns {@code <hint>-<random>} using only characters Kafka allows in a topic name. */
  static String topicName(String hint) {
    String base = NON_TOPIC.matcher(hint).replaceAll("-");
    if (base.isEmpty()) {
      base = "topic";
    }
    // Kafka allows 249 characters; stay well below to leave room for suffixes users add.
    if (base.length() > 200) {
      base = base.substring(0, 200);
    }
    return base + "-" + randomSuffix(SUFFIX_LENGTH);
  }

  static String randomSuffix(int length) {
    char[] out = new char[length];
    for (int i = 0; i < length; i++) {
      out[i] = ALPHABET[RANDOM.nextInt(ALPHABET.length)];
    }
    return new String(out);
  }

  private static String trimUnderscores(String s) {
    int start = 0;
    int end = s.length();
    while (start < end && s.charAt(start) == '_') {
      start++;
    }
    while (end > start && s.charAt(end - 1) == '_') {
      end--;
    }
    return s.substring(start, end);
  }
}
