package io.txbox.inbox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The local RabbitMQ with names unique to this class, deleted afterwards. Stands in until the
 * testkit's TestRabbit lands on main; the API matches its {@code connectionFactory()} and
 * {@code name(hint)}.
 */
final class RabbitFixture implements AfterAllCallback {
    private final List<String> queues = new CopyOnWriteArrayList<>();
    private final List<String> exchanges = new CopyOnWriteArrayList<>();

    ConnectionFactory connectionFactory() {
        ConnectionFactory f = new ConnectionFactory();
        try {
            f.setUri(System.getenv().getOrDefault("TXBOX_TEST_AMQP_URI", "amqp://guest:guest@127.0.0.1:5672"));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        f.setNetworkRecoveryInterval(200);
        return f;
    }

    /** A unique name, deleted after the class as a queue, its dead-letter queue and as an exchange. */
    String name(String hint) {
        String name = "txbox-test-" + hint + "-" + UUID.randomUUID().toString().substring(0, 8);
        queues.add(name);
        queues.add(name + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX);
        exchanges.add(name);
        return name;
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        try (Connection c = connectionFactory().newConnection()) {
            for (String q : queues) {
                try (Channel ch = c.createChannel()) {
                    ch.queueDelete(q);
                }
            }
            for (String x : exchanges) {
                try (Channel ch = c.createChannel()) {
                    ch.exchangeDelete(x);
                }
            }
        }
    }
}
