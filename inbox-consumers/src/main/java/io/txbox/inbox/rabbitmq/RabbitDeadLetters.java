package io.txbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Envelope;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A RabbitMQ consumer's dead letters: a publishing channel of its own in confirm mode, the
 * topology it may declare, and a publish that returns only once the broker confirmed it and
 * no queue returned it, so the delivery is acked only after its dead letter is safe.
 */
final class RabbitDeadLetters {
    private static final Duration CONFIRM_TIMEOUT = Duration.ofSeconds(30);

    private final String consumer;
    private final String queue;
    private final String exchange;
    private final Object publishLock = new Object();
    private @Nullable Channel channel;
    private volatile boolean returned;

    RabbitDeadLetters(String consumer, String queue, String exchange) {
        this.consumer = consumer;
        this.queue = queue;
        this.exchange = exchange;
    }

    /** Opens the publishing channel on {@code c} and, if asked, declares the exchange and its queue. */
    void open(Connection c, boolean declareTopology) throws IOException {
        Channel pub = c.createChannel();
        pub.confirmSelect();
        // A mandatory dead letter that no queue takes comes back before its confirm.
        pub.addReturnListener(r -> returned = true);
        if (declareTopology) {
            String deadLetterQueue = queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX;
            pub.exchangeDeclare(exchange, BuiltinExchangeType.DIRECT, true);
            pub.queueDeclare(deadLetterQueue, true, false, false, null);
            pub.queueBind(deadLetterQueue, exchange, queue);
        }
        channel = pub;
    }

    /** Where dead letters go, as the logs say it. */
    String destination() {
        return "exchange " + exchange;
    }

    /** Publishes the delivery with {@code reason} and the {@link DeadLetterHeaders}; waits for the confirm. */
    void publish(Envelope envelope, AMQP.BasicProperties props, byte[] body, String reason)
            throws IOException, TimeoutException, InterruptedException {
        Map<String, Object> headers = new LinkedHashMap<>();
        if (props.getHeaders() != null) {
            headers.putAll(props.getHeaders());
        }
        headers.put(DeadLetterHeaders.REASON, reason);
        headers.put(DeadLetterHeaders.CONSUMER, consumer);
        headers.put(DeadLetterHeaders.ORIGINAL_EXCHANGE, envelope.getExchange());
        headers.put(DeadLetterHeaders.ORIGINAL_ROUTING_KEY, envelope.getRoutingKey());
        headers.put(DeadLetterHeaders.ORIGINAL_QUEUE, queue);
        AMQP.BasicProperties out = props.builder().headers(headers).deliveryMode(2).build();
        synchronized (publishLock) {
            Channel pub = channel;
            if (pub == null) {
                throw new IOException("no publishing channel");
            }
            returned = false;
            pub.basicPublish(exchange, queue, true, out, body);
            pub.waitForConfirmsOrDie(CONFIRM_TIMEOUT.toMillis());
            if (returned) {
                throw new IOException("dead letter unroutable: no queue bound to exchange " + exchange
                        + " with routing key " + queue);
            }
        }
    }
}
