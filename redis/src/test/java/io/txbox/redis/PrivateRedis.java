package io.txbox.redis;

import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@code redis-server} of the test's own on a free port, without persistence, that the test
 * freezes ({@code SIGSTOP}) and thaws ({@code SIGCONT}), faults no shared server may suffer;
 * {@link #close()} kills it ({@code SIGKILL}). Needs {@code redis-server} on the PATH.
 */
final class PrivateRedis implements AutoCloseable {
    private final int port;
    private final List<String> extraArgs;
    private Process process;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    private PrivateRedis(int port, List<String> extraArgs) {
        this.port = port;
        this.extraArgs = extraArgs;
    }

    /** Starts a server; {@code extraArgs} are more {@code redis-server} options, e.g. {@code --requirepass x}. */
    static PrivateRedis start(String... extraArgs) throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        PrivateRedis r = new PrivateRedis(port, List.of(extraArgs));
        r.launch();
        return r;
    }

    private void launch() throws IOException {
        List<String> cmd = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port), "--bind",
                "127.0.0.1", "--save", "", "--appendonly", "no"));
        cmd.addAll(extraArgs);
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.to(new File(System.getProperty("java.io.tmpdir"),
                        "txbox-private-redis-" + port + ".log")))
                .start();
        RedisURI uri = RedisURI.create(adminUrl());
        uri.setTimeout(Duration.ofSeconds(2));
        client = RedisClient.create(uri);
        await("redis-server on port " + port).atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .ignoreExceptions().until(() -> {
                    connection = client.connect();
                    return "PONG".equals(connection.sync().ping());
                });
    }

    private String adminUrl() {
        int pass = extraArgs.indexOf("--requirepass");
        String auth = pass < 0 ? "" : extraArgs.get(pass + 1) + "@";
        return "redis://" + auth + "127.0.0.1:" + port;
    }

    /** {@code redis://127.0.0.1:<port>}, without a password. */
    String url() {
        return "redis://127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    /** Commands on the test's own connection (not usable while frozen). */
    RedisCommands<String, String> commands() {
        return connection.sync();
    }

    /** The server stops answering (its connections stay open), as on a long GC-like stall or a full disk. */
    void freeze() throws Exception {
        signal("STOP");
    }

    /** The server answers again, working off what its clients sent meanwhile. */
    void thaw() throws Exception {
        signal("CONT");
    }

    private void signal(String name) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
        }
    }

    @Override
    public void close() {
        if (connection != null) {
            connection.close();
        }
        if (client != null) {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
