package io.txbox.saga.order;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.txbox.inbox.http.HttpIdempotency;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /orders} on the JDK's HTTP server, behind the inbox's Idempotency-Key support in
 * its transactional form: the first request with a key runs {@link PlaceOrder} in the
 * transaction that also stores its response, so the order, its outbox message and the stored
 * response commit together; a retry gets the stored response byte for byte, a concurrent one
 * 409, a different body under the same key 422, a request without a key 400.
 */
final class OrderHttp implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(OrderHttp.class);

    /** The business part of the request, run in {@code tx}; returns the 201 body. */
    @FunctionalInterface
    interface PlaceOrder {
        byte[] place(Connection tx, String idempotencyKey, byte[] body) throws SQLException;
    }

    private final HttpIdempotency idempotency;
    private final PlaceOrder placeOrder;
    private HttpServer server;
    private ExecutorService executor;

    OrderHttp(HttpIdempotency idempotency, PlaceOrder placeOrder) {
        this.idempotency = idempotency;
        this.placeOrder = placeOrder;
    }

    String start(int port) {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
        } catch (IOException e) {
            throw new IllegalStateException("cannot listen on 127.0.0.1:" + port + ": " + e.getMessage(), e);
        }
        executor = Executors.newFixedThreadPool(16, r -> {
            Thread t = new Thread(r, "order-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/orders", idempotency.forHttpServer(this::handle));
        server.start();
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Runs in {@code tx}, which the Idempotency-Key support commits (below 500) or rolls back. */
    private void handle(Connection tx, HttpExchange exchange) throws IOException {
        if (!"POST".equals(exchange.getRequestMethod())) {
            respond(exchange, 405, "{\"error\":\"POST only\"}");
            return;
        }
        byte[] body;
        try (InputStream in = exchange.getRequestBody()) {
            body = in.readAllBytes();
        }
        String key = exchange.getRequestHeaders().getFirst(HttpIdempotency.DEFAULT_HEADER);
        byte[] response;
        try {
            response = placeOrder.place(tx, key, body);
        } catch (IllegalArgumentException e) {
            // Refused before anything was written, so committing the 400 commits nothing else.
            respond(exchange, 400, "{\"error\":\"" + e.getMessage().replace('"', '\'') + "\"}");
            return;
        } catch (SQLException e) {
            // A 5xx: the transaction is rolled back and the key released, so a retry runs again.
            log.warn("order-http - placing the order for key {} failed: {}", key, e.toString());
            respond(exchange, 503, "{\"error\":\"database unavailable\"}");
            return;
        }
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(201, response.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(response);
        }
    }

    private static void respond(HttpExchange exchange, int status, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() {
        if (server != null) {
            server.stop(0);
            executor.shutdownNow();
        }
    }
}
