package io.txbox.relay.standalone;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.txbox.TxboxException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay process's HTTP side, on the JDK's own server (no framework):
 * <ul>
 *   <li>{@code GET /health/live}: 200 while the process runs and is not shutting down;
 *   <li>{@code GET /health/ready} and {@code GET /health}: 200 when the database and every
 *       broker answer and every destination's target exists ({@link
 *       io.txbox.relay.Relay#health}), else 503; the JSON body names each check and what failed,
 *       such as a missing RabbitMQ exchange;
 *   <li>{@code GET /metrics}: the Prometheus text exposition.
 * </ul>
 */
final class HttpEndpoints implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HttpEndpoints.class);

    /**
     * Outcome of the readiness checks.
     *
     * @param up true if every check passed
     * @param checks check name ({@code database}, {@code kafka:orders}, ...) to {@code UP} or the error
     */
    record Readiness(boolean up, Map<String, String> checks) {}

    private final HttpServer server;
    private final ExecutorService executor;
    private final String relayId;
    private volatile boolean stopping;

    HttpEndpoints(String host, int port, String relayId, Supplier<Readiness> readiness, Supplier<String> metrics) {
        this.relayId = relayId;
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new TxboxException("cannot listen on " + host + ":" + port + " (" + RelayConfig.HTTP_HOST + ", "
                    + RelayConfig.HTTP_PORT + "): " + e.getMessage(), e);
        }
        // two threads: a slow readiness check must not stall a metrics scrape
        executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "txbox-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/health/live", ex -> handle(ex, () -> live()));
        server.createContext("/health/ready", ex -> handle(ex, () -> ready(readiness)));
        server.createContext("/health", ex -> handle(ex, () -> ex.getRequestURI().getPath().equals("/health")
                ? ready(readiness) : notFound()));
        server.createContext("/metrics", ex -> handle(ex, () -> new Response(200,
                "text/plain; version=0.0.4; charset=utf-8", metrics.get())));
        server.createContext("/", ex -> handle(ex, HttpEndpoints::notFound));
        server.start();
        log.info("{} - HTTP on {}:{}: /health/live /health/ready /metrics", relayId, host, port());
    }

    /** The bound port (the real one when the config asked for 0). */
    int port() {
        return server.getAddress().getPort();
    }

    /** Turns liveness and readiness to 503 so a load balancer stops routing here while the relay drains. */
    void stopping() {
        stopping = true;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
        try {
            executor.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private record Response(int status, String contentType, String body) {}

    @FunctionalInterface
    private interface Handler {
        Response get() throws Exception;
    }

    private void handle(HttpExchange ex, Handler handler) throws IOException {
        Response r;
        try {
            if (!ex.getRequestMethod().equals("GET") && !ex.getRequestMethod().equals("HEAD")) {
                r = json(405, Map.of("error", "method not allowed"));
            } else {
                r = handler.get();
            }
        } catch (Exception e) {
            log.warn("{} - {} failed: {}", relayId, ex.getRequestURI().getPath(), Redaction.scrub(e.toString()));
            r = json(500, Map.of("error", String.valueOf(Redaction.scrub(e.toString()))));
        }
        byte[] body = r.body().getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", r.contentType());
        ex.getResponseHeaders().set("Cache-Control", "no-store");
        boolean head = ex.getRequestMethod().equals("HEAD");
        ex.sendResponseHeaders(r.status(), head ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            if (!head) {
                out.write(body);
            }
        }
    }

    private Response live() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", stopping ? "STOPPING" : "UP");
        body.put("relayId", relayId);
        return json(stopping ? 503 : 200, body);
    }

    private Response ready(Supplier<Readiness> readiness) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (stopping) {
            body.put("status", "STOPPING");
            body.put("relayId", relayId);
            return json(503, body);
        }
        Readiness r = readiness.get();
        body.put("status", r.up() ? "UP" : "DOWN");
        body.put("relayId", relayId);
        Map<String, String> checks = new LinkedHashMap<>();
        r.checks().forEach((k, v) -> checks.put(k, String.valueOf(Redaction.scrub(v))));
        body.put("checks", checks);
        return json(r.up() ? 200 : 503, body);
    }

    private static Response notFound() {
        return json(404, Map.of("error", "not found; try /health, /health/live, /health/ready or /metrics"));
    }

    private static Response json(int status, Map<String, ?> body) {
        return new Response(status, "application/json", object(body, new StringBuilder()).toString());
    }

    /**
     * {@code body} as a JSON object. Its values are strings or maps of them, so a few lines do
     * what Jackson would, without loading Jackson on the way to the first readiness answer.
     */
    private static StringBuilder object(Map<String, ?> body, StringBuilder json) {
        json.append('{');
        String comma = "";
        for (Map.Entry<String, ?> e : body.entrySet()) {
            string(e.getKey(), json.append(comma)).append(':');
            if (e.getValue() instanceof Map<?, ?> nested) {
                @SuppressWarnings("unchecked")
                Map<String, ?> inner = (Map<String, ?>) nested;
                object(inner, json);
            } else {
                string(String.valueOf(e.getValue()), json);
            }
            comma = ",";
        }
        return json.append('}');
    }

    private static StringBuilder string(String s, StringBuilder json) {
        json.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                json.append('\\').append(c);
            } else if (c < 0x20) {
                json.append(String.format("\\u%04x", (int) c));
            } else {
                json.append(c);
            }
        }
        return json.append('"');
    }
}
