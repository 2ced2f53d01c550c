package io.txbox.relay.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ReturnListener;
import com.rabbitmq.client.ShutdownSignalException;
import io.txbox.relay.PublishException;
import java.io.IOException;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import org.jspecify.annotations.Nullable;

/**
 * One channel in confirm mode, used by one publishing thread, with every unconfirmed publish
 * kept by its sequence number. A basic.return (unroutable with mandatory) arrives before the
 * ack of the same message and turns that ack into a failure.
 */
final class ConfirmChannel implements ConfirmListener, ReturnListener {
    private final Channel channel;
    private final ConcurrentSkipListMap<Long, Pending> pending = new ConcurrentSkipListMap<>();
    private final Map<String, Pending> byMessageId = new ConcurrentHashMap<>();
    private volatile boolean dead;

    private static final class Pending {
        final String messageId;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        volatile @Nullable String returned;

        Pending(String messageId) {
            this.messageId = messageId;
        }
    }

    ConfirmChannel(Connection connection) throws IOException {
        this.channel = connection.createChannel();
        channel.confirmSelect();
        channel.addConfirmListener(this);
        channel.addReturnListener(this);
        channel.addShutdownListener(this::shutdown);
    }

    boolean usable() {
        return !dead && channel.isOpen();
    }

    CompletableFuture<Void> publish(String exchange, String routingKey, AMQP.BasicProperties props, byte[] body) {
        Pending p = new Pending(props.getMessageId());
        long seq = channel.getNextPublishSeqNo();
        pending.put(seq, p);
        byMessageId.put(p.messageId, p);
        try {
            channel.basicPublish(exchange, routingKey, true, props, body);
        } catch (IOException | RuntimeException e) {
            forget(seq, p);
            dead = true;
            p.future.completeExceptionally(PublishException.retryable("RabbitMQ publish to exchange " + exchange
                    + " failed: " + e, e));
        }
        return p.future;
    }

    @Override
    public void handleReturn(int replyCode, String replyText, String exchange, String routingKey,
            AMQP.BasicProperties properties, byte[] body) {
        Pending p = properties.getMessageId() == null ? null : byMessageId.get(properties.getMessageId());
        if (p != null) {
            p.returned = "returned by RabbitMQ: " + replyCode + " " + replyText + " (exchange " + exchange
                    + ", routing key " + routingKey + ")";
        }
    }

    @Override
    public void handleAck(long deliveryTag, boolean multiple) {
        settle(deliveryTag, multiple, null);
    }

    @Override
    public void handleNack(long deliveryTag, boolean multiple) {
        settle(deliveryTag, multiple, "nacked by RabbitMQ");
    }

    private void settle(long tag, boolean multiple, @Nullable String failure) {
        NavigableMap<Long, Pending> done = multiple ? pending.headMap(tag, true) : pending.subMap(tag, true, tag, true);
        for (var it = done.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            it.remove();
            Pending p = e.getValue();
            byMessageId.remove(p.messageId, p);
            String why = failure != null ? failure : p.returned;
            if (why == null) {
                p.future.complete(null);
            } else {
                p.future.completeExceptionally(PublishException.retryable(why, null));
            }
        }
    }

    private void shutdown(ShutdownSignalException cause) {
        dead = true;
        // unconfirmed messages may or may not have arrived: retrying them is the at-least-once choice
        for (var it = pending.entrySet().iterator(); it.hasNext(); ) {
            Pending p = it.next().getValue();
            it.remove();
            p.future.completeExceptionally(PublishException.retryable("RabbitMQ channel closed before the confirm: "
                    + cause.getMessage(), cause));
        }
        byMessageId.clear();
    }

    private void forget(long seq, Pending p) {
        pending.remove(seq, p);
        byMessageId.remove(p.messageId, p);
    }

    void close() {
        dead = true;
        try {
            if (channel.isOpen()) {
                channel.close();
            }
        } catch (IOException | java.util.concurrent.TimeoutException | RuntimeException ignored) {
            // closing anyway
        }
    }
}
