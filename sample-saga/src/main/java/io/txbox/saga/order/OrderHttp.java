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
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /orders} on the JDK's HTTP server, behind the inbox's Idempotency-Key support:
 * the first request with a key runs {@link PlaceOrder} in a transaction of its own; a retry gets
 * the stored response byte for byte, a concurrent one 409, a different body under the same key
 * 422, a request without a key 400.
 */
final class OrderHttp implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(OrderHttp.class);

    /** The business part of the request, run in {@code tx}; returns the 201 body. */
    @FunctionalInterface
    interface PlaceOrder {
        byte[] place(Connection tx, String idempotencyKey, byte[] body) throws SQLException;
    }

    private final HttpIdempotency idempotency;
    private final DataSource ds;
    private final PlaceOrder placeOrder;
    private HttpServer server;
    private ExecutorService executor;

    OrderHttp(HttpIdempotency idempotency, DataSource ds, PlaceOrder placeOrder) {
        this.idempotency = idempotency;
        this.ds = ds;
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

    private void handle(HttpExchange exchange) throws IOException {
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
        try (Connection tx = ds.getConnection()) {
            tx.setAutoCommit(false);
            try {
                response = placeOrder.place(tx, key, body);
                tx.commit();
            } catch (SQLException | RuntimeException e) {
                tx.rollback();
                throw e;
            }
        } catch (IllegalArgumentException e) {
            respond(exchange, 400, "{\"error\":\"" + e.getMessage().replace('"', '\'') + "\"}");
            return;
        } catch (SQLException e) {
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
