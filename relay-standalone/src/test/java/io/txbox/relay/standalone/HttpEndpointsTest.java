package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HttpEndpointsTest {
    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> get(HttpEndpoints endpoints, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoints.port() + path))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void ready_checksWithQuotesBackslashesAndNewlines_areValidJsonThatReadsBackTheSame() throws Exception {
        Map<String, String> checks = new LinkedHashMap<>();
        checks.put("database", "DOWN: relation \"txbox_outbox\" does not exist\n  at C:\\db\ttab");
        checks.put("kafka:orders", "UP");
        try (HttpEndpoints endpoints = new HttpEndpoints("127.0.0.1", 0, "relay-1",
                () -> new HttpEndpoints.Readiness(false, checks), () -> "")) {
            HttpResponse<String> r = get(endpoints, "/health/ready");
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
            JsonNode body = new ObjectMapper().readTree(r.body());
            assertThat(body.get("status").asText()).isEqualTo("DOWN");
            assertThat(body.get("relayId").asText()).isEqualTo("relay-1");
            assertThat(body.at("/checks/database").asText()).isEqualTo(checks.get("database"));
            assertThat(body.at("/checks/kafka:orders").asText()).isEqualTo("UP");
        }
    }

    @Test
    void live_andUnknownPath_answerJson() throws Exception {
        try (HttpEndpoints endpoints = new HttpEndpoints("127.0.0.1", 0, "relay-2",
                () -> new HttpEndpoints.Readiness(true, Map.of()), () -> "")) {
            HttpResponse<String> live = get(endpoints, "/health/live");
            assertThat(live.statusCode()).isEqualTo(200);
            assertThat(new ObjectMapper().readTree(live.body()).get("status").asText()).isEqualTo("UP");
            HttpResponse<String> missing = get(endpoints, "/nope");
            assertThat(missing.statusCode()).isEqualTo(404);
            assertThat(new ObjectMapper().readTree(missing.body()).get("error").asText()).startsWith("not found");
        }
    }
}
