package io.txbox.saga;

import com.rabbitmq.client.ConnectionFactory;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import java.time.Duration;
import javax.sql.DataSource;

/** Builds the inbox's broker consumers with the demo's settings: quick retries, quick shutdown. */
final class ConsumerAdapters {
    /** Retries a failed delivery after 100 ms, doubling up to 2 s: the demo cannot wait a minute. */
    private static final Duration BACKOFF_INITIAL = Duration.ofMillis(100);
    private static final Duration BACKOFF_MAX = Duration.ofSeconds(2);
    private static final Duration SHUTDOWN = Duration.ofSeconds(5);

    private ConsumerAdapters() {}

    static InboxConsumer kafka(String bootstrap, String topic, String group, String clientId, Inbox inbox,
            DataSource ds, Handler handler) {
        InboxConsumer consumer = KafkaInboxConsumer.builder(inbox, ds, handler)
                .bootstrapServers(bootstrap)
                .topics(topic)
                .groupId(group)
                .consumerProperty("client.id", clientId)
                .backoff(BACKOFF_INITIAL, BACKOFF_MAX)
                .shutdownTimeout(SHUTDOWN)
                .pollTimeout(Duration.ofMillis(100))
                .build();
        consumer.start();
        return consumer;
    }

    static InboxConsumer rabbit(ConnectionFactory factory, String queue, Inbox inbox, DataSource ds,
            Handler handler) {
        InboxConsumer consumer = RabbitInboxConsumer.builder(inbox, ds, handler)
                .connectionFactory(factory)
                .queue(queue)
                .concurrency(4)
                .backoff(BACKOFF_INITIAL, BACKOFF_MAX)
                .shutdownTimeout(SHUTDOWN)
                .build();
        consumer.start();
        return consumer;
    }
}
