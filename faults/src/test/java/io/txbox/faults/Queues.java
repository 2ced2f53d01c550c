package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.KeyOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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
        return drainStepKeys(connection, queue, expected, timeout, null);
    }

    /** As above, feeding each message's {@link Feeder} payload to {@code order} (when not null) in arrival order. */
    static List<String> drainStepKeys(Connection connection, String queue, Set<String> expected, Duration timeout,
            KeyOrder order) throws Exception {
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
                    if (order != null) {
                        Feeder.add(order, new String(r.getBody(), StandardCharsets.UTF_8));
                    }
                    if (expected.contains(key)) {
                        seen.add(key);
                    }
                }
                return seen.size() == expected.size();
            });
        }
        return keys;
    }
}
