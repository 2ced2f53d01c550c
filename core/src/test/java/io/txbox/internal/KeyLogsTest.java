package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Keys in logs: quoted as they are, or hashed everywhere a txbox text quotes them. */
class KeyLogsTest {
    @Test
    void show_hashed_sameKeySameHashOtherKeyOtherHash() {
        assertThat(KeyLogs.HASHED.show("alice@example.com")).matches("sha256:[0-9a-f]{16}")
                .isEqualTo(KeyLogs.hashOf("alice@example.com")).isNotEqualTo(KeyLogs.HASHED.show("bob@example.com"));
        assertThat(KeyLogs.PLAIN.show("alice@example.com")).isEqualTo("\"alice@example.com\"");
    }

    @Test
    void redact_hashed_replacesTheQuotedKeyOnly() {
        String text = "inbox process for consumer \"c\" key \"1\" failed after 1 attempt";

        assertThat(KeyLogs.HASHED.redact(text, "1"))
                .isEqualTo("inbox process for consumer \"c\" key " + KeyLogs.hashOf("1") + " failed after 1 attempt");
        assertThat(KeyLogs.PLAIN.redact(text, "1")).isEqualTo(text);
        assertThat(KeyLogs.HASHED.redact(null, "1")).isEqualTo("null");
    }
}
