package io.txbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Deterministic keys: RFC 9562 version 5 UUIDs, equal to every other implementation's. */
class MessageKeysTest {
    @Test
    void uuid5_rfc9562TestVector_matches() {
        // RFC 9562, appendix A.4: namespace DNS, name "www.example.com"
        assertThat(MessageKeys.uuid5(MessageKeys.NAMESPACE_DNS, "www.example.com"))
                .isEqualTo(UUID.fromString("2ed6657d-e927-568b-95e1-2665a8aea6a2"));
    }

    @Test
    void uuid5_eachStandardNamespaceAndNonAsciiNames_matchPythonsUuid5() {
        // computed with Python's uuid.uuid5, which encodes a str name as UTF-8
        assertThat(MessageKeys.uuid5(MessageKeys.NAMESPACE_DNS, "python.org"))
                .hasToString("886313e1-3b8a-5372-9b90-0c9aee199e5d");
        assertThat(MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "https://example.com/charges/c-7/o-42"))
                .hasToString("7b2f9a85-7bdb-5959-a33b-2e19dd648417");
        assertThat(MessageKeys.uuid5(MessageKeys.NAMESPACE_OID, "1.3.6.1"))
                .hasToString("1447fa61-5277-5fef-a9b3-fbc6e44f4af3");
        assertThat(MessageKeys.uuid5(MessageKeys.NAMESPACE_X500, "CN=Zo\u00eb M\u00fcller"))
                .hasToString("504940a3-369e-572c-94d3-02245ff2bc1b");
    }

    @Test
    void standardNamespaces_areRfc9562s() {
        assertThat(MessageKeys.NAMESPACE_DNS).hasToString("6ba7b810-9dad-11d1-80b4-00c04fd430c8");
        assertThat(MessageKeys.NAMESPACE_URL).hasToString("6ba7b811-9dad-11d1-80b4-00c04fd430c8");
        assertThat(MessageKeys.NAMESPACE_OID).hasToString("6ba7b812-9dad-11d1-80b4-00c04fd430c8");
        assertThat(MessageKeys.NAMESPACE_X500).hasToString("6ba7b814-9dad-11d1-80b4-00c04fd430c8");
    }

    @Test
    void uuid5_sameInputs_sameKeyOtherNameOrNamespace_otherKey() {
        UUID charges = MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "https://shop.example/charges");
        UUID refunds = MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "https://shop.example/refunds");

        UUID key = MessageKeys.uuid5(charges, "c-7/o-42");

        assertThat(MessageKeys.uuid5(charges, "c-7/o-42")).isEqualTo(key);
        assertThat(MessageKeys.uuid5(charges, "c-7/o-43")).isNotEqualTo(key);
        assertThat(MessageKeys.uuid5(refunds, "c-7/o-42")).isNotEqualTo(key);
        assertThat(key.version()).isEqualTo(5);
        assertThat(key.variant()).isEqualTo(2);
    }

    @Test
    void uuid5_nullOrEmpty_refusedNamingTheParameter() {
        assertThatThrownBy(() -> MessageKeys.uuid5(null, "o-42"))
                .isInstanceOf(InvalidInputException.class).hasMessage("namespace must not be null");
        assertThatThrownBy(() -> MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, null))
                .isInstanceOf(InvalidInputException.class).hasMessage("name must not be null");
        assertThatThrownBy(() -> MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, ""))
                .isInstanceOf(InvalidInputException.class).hasMessageStartingWith("name is empty");
    }

    @Test
    void uuid5_loneSurrogate_refusedRatherThanSharingAKeyWithAQuestionMark() {
        assertThatThrownBy(() -> MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "o-\ud800"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("lone surrogate");
        assertThat(MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "o-\ud83d\ude00"))
                .isNotEqualTo(MessageKeys.uuid5(MessageKeys.NAMESPACE_URL, "o-?"));
    }
}
