package io.txbox.inbox.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.inbox.InboundMessage;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class HttpIdempotencyTest {
    private static byte[] fp(String method, String path, String body) {
        return HttpIdempotency.fingerprint(InboundMessage.builder("k", body.getBytes(UTF_8))
                .header(HttpIdempotency.METHOD, method).header(HttpIdempotency.PATH, path).build());
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
    void builder_badHeaderNameOrConsumer_isRejectedNamingTheValue() {
        DataSource ds = (DataSource) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DataSource.class}, (p, m, a) -> null);
        assertThatThrownBy(() -> HttpIdempotency.builder(ds, "api").headerName("Bad Header"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("\"Bad Header\"");
        assertThatThrownBy(() -> HttpIdempotency.builder(ds, "a@b")).isInstanceOf(ConfigException.class);
        assertThatThrownBy(() -> HttpIdempotency.builder(null, "api")).hasMessage("ds must not be null");
    }
}
