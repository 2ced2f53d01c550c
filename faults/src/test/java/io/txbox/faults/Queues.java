package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** RabbitMQ plumbing for the oracle: a topic exchange fanned out to queues, an audit queue drained back. */
final class Queues {
    private Queues() {}

    /** Declares a durable topic exchange and durable queues bound to it with {@code #}. */
    static void declare(Connection connection, String exchange, String... queues) throws Exception {
        try (Channel ch = connection.createChannel()) {
            ch.exchangeDeclare(exchange, "topic", true);
            for (String q : queues) {
                ch.queueDeclare(q, true, false, false, null);
                ch.queuePurge(q);
                ch.queueBind(q, exchange, "#");
            }
        }
    }

    static long ready(Connection connection, String queue) throws Exception {
        try (Channel ch = connection.createChannel()) {
            return ch.queueDeclarePassive(queue).getMessageCount();
        }
    }

    /** Drains {@code queue}, acking, until every step key of {@code expected} was seen; returns all step keys read. */
    static List<String> drainStepKeys(Connection connection, String queue, Set<String> expected, Duration timeout)
            throws Exception {
        List<String> keys = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        try (Channel ch = connection.createChannel()) {
            await().atMost(timeout).pollInterval(Duration.ofMillis(50)).until(() -> {
                GetResponse r;
                while ((r = ch.basicGet(queue, true)) != null) {
                    Object k = r.getProps().getHeaders() == null ? null
                            : r.getProps().getHeaders().get(RabbitPublisher.IDEMPOTENCY_HEADER);
                    String key = k == null ? null : k.toString();
                    keys.add(key);
                    if (expected.contains(key)) {
                        seen.add(key);
                    }
                }
                return seen.size() == expected.size();
            });
        }
        return keys;
    }

    /** Runs rabbitmqctl and returns its output; fails on a non-zero exit. */
    static String rabbitmqctl(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("rabbitmqctl", "-q"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            out = String.join("\n", r.lines().toList());
        }
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException("rabbitmqctl " + String.join(" ", args) + " failed: " + out);
        }
        return out;
    }

    /** Closes from the broker's side every connection the client named {@code connectionName}; returns how many. */
    static int closeFromBroker(String connectionName) throws Exception {
        List<String> pids = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(300)).until(() -> {
            pids.clear();
            for (String line : rabbitmqctl("list_connections", "--no-table-headers", "pid", "client_properties")
                    .split("\n")) {
                if (line.contains("{\"connection_name\",\"" + connectionName + "\"}")) {
                    pids.add(line.substring(0, line.indexOf('\t')));
                }
            }
            return !pids.isEmpty();
        });
        for (String pid : pids) {
            rabbitmqctl("close_connection", pid, "txbox faults: simulated connection loss");
        }
        return pids.size();
    }
}
