package io.txbox.compat;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** The starter's Spring MVC Idempotency-Key filter on a real server port: a controller's write runs once per key. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "txbox.http.idempotency.enabled=true")
@Import(IdempotencyKeyTests.Orders.class)
@DirtiesContext
class IdempotencyKeyTests {
    @LocalServerPort int port;
    @Autowired Orders orders;
    @Autowired JdbcTemplate jdbc;
    final HttpClient http = HttpClient.newHttpClient();

    @Test
    void post_runsOncePerKey_replayIsMarked_sameKeyOtherBodyIs422() throws Exception {
        HttpResponse<String> first = placeOrder("order-key-1", "{\"item\":\"book\"}");
        HttpResponse<String> replay = placeOrder("order-key-1", "{\"item\":\"book\"}");
        HttpResponse<String> reused = placeOrder("order-key-1", "{\"item\":\"pen\"}");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(jdbc.queryForList("select item from " + orders.table, String.class))
                .as("orders written").containsExactly("{\"item\":\"book\"}");
    }

    private HttpResponse<String> placeOrder(String key, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
                .header("Idempotency-Key", key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A controller that writes the order through JdbcTemplate and answers 201 with its id. */
    @RestController
    static class Orders {
        final String table;
        private final JdbcTemplate jdbc;

        Orders(JdbcTemplate jdbc, TxboxTables tables) {
            this.jdbc = jdbc;
            table = tables.schema() + ".orders";
            jdbc.execute("create table " + table + " (id bigserial primary key, item text not null)");
        }

        @PostMapping(path = "/orders", produces = "application/json")
        ResponseEntity<String> place(@RequestBody String item) {
            Long id = jdbc.queryForObject("insert into " + table + " (item) values (?) returning id", Long.class, item);
            return ResponseEntity.status(HttpStatus.CREATED).body("{\"orderId\":" + id + "}");
        }
    }
}
