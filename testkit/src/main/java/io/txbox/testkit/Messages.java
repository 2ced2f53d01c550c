package io.txbox.testkit;

import org.jspecify.annotations.Nullable;

/** Helpers for failure messages that read as sentences. */
final class Messages {
  private Messages() {}

  /** Returns the text without a final period, so it can be followed by ". ". */
  static String clause(@Nullable String text) {
    if (text == null || text.isBlank()) {
      return "no detail";
    }
    String trimmed = text.strip();
    while (trimmed.endsWith(".")) {
      trimmed = trimmed.substring(0, trimmed.length() - 1);
    }
    return trimmed;
  }
}
