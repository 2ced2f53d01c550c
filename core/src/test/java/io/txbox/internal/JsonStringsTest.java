package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class JsonStringsTest {
    @Test
    void encode_decode_roundTripsQuotesBackslashesControlCharactersAndUnicode() {
        List<String> values = List.of("", "plain", "quote \" and \\ backslash", "tab\tnew\nline\r\u0001", "ünï 😀");
        assertThat(JsonStrings.decode(JsonStrings.encode(values))).isEqualTo(values);
    }

    @Test
    void literal_escapesQuotesControlCharactersAndLineSeparators() {
        assertThat(JsonStrings.literal("a \"b\" \\ \n\u0001\u2028")).isEqualTo("\"a \\\"b\\\" \\\\ \\n\\u0001\\u2028\"");
        assertThat(JsonStrings.decode("[" + JsonStrings.literal("x\u2029y") + "]")).containsExactly("x\u2029y");
    }

    @Test
    void decode_serverReformatted_readsSpacesAndUnicodeEscapes() {
        assertThat(JsonStrings.decode(" [ \"a\" , \"\\u00fc\\/\" ] ")).containsExactly("a", "ü/");
        assertThat(JsonStrings.decode("[]")).isEmpty();
    }

    @Test
    void decode_notAnArrayOfStrings_fails() {
        assertThatThrownBy(() -> JsonStrings.decode("[1]")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> JsonStrings.decode("[\"open")).isInstanceOf(IllegalArgumentException.class);
    }
}
