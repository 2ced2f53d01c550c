package io.txbox.inbox.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.testkit.NullArguments;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class HttpIdempotencyTest {
    /** Never asked for a connection: these tests stop before any database work. */
    private static final DataSource ds = NullArguments.untouchable(DataSource.class);

    private static byte[] fp(String method, String path, String body) {
        return HttpIdempotency.fingerprint().of(InboundMessage.builder("k", body.getBytes(UTF_8))
                .header(RequestFingerprint.METHOD, method).header(RequestFingerprint.PATH, path).build());
    }

    @Test
    void fingerprint_coversMethodPathAndBodyWithoutAmbiguity() {
        assertThat(fp("POST", "/a", "x")).isEqualTo(fp("POST", "/a", "x"));
        assertThat(fp("POST", "/a", "x")).isNotEqualTo(fp("PUT", "/a", "x"));
        assertThat(fp("POST", "/a", "x")).isNotEqualTo(fp("POST", "/b", "x"));
        assertThat(fp("POST", "/a", "x")).isNotEqualTo(fp("POST", "/a", "y"));
        assertThat(fp("POST", "/ab", "c")).isNotEqualTo(fp("POST", "/a", "bc"));
    }

    @Test
    void problem_isProblemJsonWithEscapedDetail() {
        HttpResponseData p = Problems.problem(422, "Unprocessable Content", "key \"a\\b\"\n");
        assertThat(p.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(new String(p.body(), UTF_8)).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Unprocessable Content\","
                + "\"status\":422,\"detail\":\"key \\\"a\\\\b\\\"\\n\"}");
    }

    @Test
    void requestHeader_isMatchedCaseInsensitively() {
        HttpRequestData r = new HttpRequestData("POST", "/", Map.of("idempotency-KEY", List.of("k1")), null);
        assertThat(r.header("Idempotency-Key")).isEqualTo("k1");
        assertThat(r.body()).isEmpty();
    }

    @Test
    void response_statusOutOfRange_isRejected() {
        assertThatThrownBy(() -> new HttpResponseData(600, Map.of(), null))
                .hasMessage("status must be between 100 and 599, but was 600");
    }

    @Test
    void keyHeader_bareValue_isTheKeyAsItStands() {
        assertThat(KeyHeader.parse("Idempotency-Key", "abc")).isEqualTo("abc");
        assertThat(KeyHeader.parse("Idempotency-Key", "a\"b")).isEqualTo("a\"b");
        assertThat(KeyHeader.parse("Idempotency-Key", "")).isEmpty();
    }

    @Test
    void keyHeader_sfString_isUnquotedAndUnescaped() {
        assertThat(KeyHeader.parse("Idempotency-Key", "\"abc\"")).isEqualTo("abc");
        assertThat(KeyHeader.parse("Idempotency-Key", "\"a \\\"b\\\\c\"")).isEqualTo("a \"b\\c");
        assertThat(KeyHeader.parse("Idempotency-Key", "\"\"")).isEmpty();
        assertThat(KeyHeader.parse("Idempotency-Key", " \"abc\"\t")).isEqualTo("abc");
    }

    @Test
    void keyHeader_malformedSfString_isRefusedNamingTheProblem() {
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"abc"))
                .isInstanceOf(InvalidInputException.class)
                .hasMessage("Idempotency-Key \"\\\"abc\" is not a valid structured-header string: "
                        + "the quoted string has no closing quote");
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"ab\\"))
                .hasMessageContaining("ends with a backslash and has no closing quote");
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"a\\nb\""))
                .hasMessageContaining("a backslash may only escape \" or \\, but escapes 'n'");
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"caf\u00e9\""))
                .hasMessageContaining("printable ASCII (0x20 to 0x7E), but has U+00E9");
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"a\tb\""))
                .hasMessageContaining("but has U+0009");
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"abc\";p=1"))
                .hasMessageContaining("has \";p=1\" after the closing quote");
    }

    @Test
    void builder_badHeaderNameOrConsumer_isRejectedNamingTheValue() {
        Inbox keys = Inbox.builder("api").fingerprint(HttpIdempotency.fingerprint()).build();
        assertThatThrownBy(() -> HttpIdempotency.builder(keys, ds).headerName("Bad Header"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("\"Bad Header\"");
        assertThatThrownBy(() -> Inbox.builder("a@b")).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> HttpIdempotency.builder(keys, null)).hasMessage("ds must not be null");
    }

    @Test
    void parse_malformedQuotedKey_showsTheValueWithItsInnerQuotesEscaped() {
        assertThatThrownBy(() -> KeyHeader.parse("Idempotency-Key", "\"\"abc\""))
                .hasMessageStartingWith("Idempotency-Key \"\\\"\\\"abc\\\"\" is not a valid structured-header string")
                .hasMessageContaining("it has \"abc\\\"\" after the closing quote");
    }

    @Test
    void build_storeWithoutTheRequestFingerprint_isRejectedSayingWhatToDo() {
        for (Fingerprint f : List.of(Fingerprint.sha256(), Fingerprint.none())) {
            Inbox keys = Inbox.builder("api").fingerprint(f).build();
            assertThatThrownBy(() -> HttpIdempotency.builder(keys, ds).build())
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("consumer \"api\" does not fingerprint the request method and path")
                    .hasMessageContaining(".fingerprint(HttpIdempotency.fingerprint())");
        }
    }

    @Test
    void transactionalForm_onAStoreAlone_isRefusedAtOnce() {
        TwoPhaseStore store = Inbox.builder("api").fingerprint(HttpIdempotency.fingerprint()).build().twoPhase(ds);
        HttpIdempotency idempotency = HttpIdempotency.builder(store).build();
        assertThatThrownBy(() -> idempotency.forHttpServer((tx, exchange) -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HttpIdempotency.builder(inbox, dataSource)");
    }
}
