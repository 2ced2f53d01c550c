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
 * One channel in confirm mode for one exchange, used by one publishing thread, with every
 * unconfirmed publish kept by its sequence number. A basic.return (unroutable with mandatory)
 * arrives before the ack of the same message and turns that ack into a failure.
 *
 * <p>One exchange per channel because RabbitMQ closes the whole channel on a channel error: a
 * publish to a missing exchange (404) would otherwise fail every other exchange's unconfirmed
 * messages on the same channel. Once closed, the channel fails every later publish with the
 * cause of its closing, so no later message of the exchange overtakes one that failed in the
 * same batch; the publisher replaces it only between batches.
 */
final class ConfirmChannel implements ConfirmListener, ReturnListener {
    private final Channel channel;
    private final String exchange;
    private final ConcurrentSkipListMap<Long, Pending> pending = new ConcurrentSkipListMap<>();
    private final Map<String, Pending> byMessageId = new ConcurrentHashMap<>();
    private volatile boolean dead;
    private volatile @Nullable PublishException closedBy;
    /** Set by a publish, cleared at the end of each batch; only the owning thread touches it. */
    private boolean usedInBatch;

    private static final class Pending {
        final String messageId;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        volatile @Nullable String returned;

        Pending(String messageId) {
            this.messageId = messageId;
        }
    }

    ConfirmChannel(Connection connection, String exchange) throws IOException {
        Channel created = connection.createChannel();
        if (created == null) {
            throw new IOException("no free channel on the RabbitMQ connection (channel_max reached)");
        }
        this.channel = created;
        this.exchange = exchange;
        channel.confirmSelect();
        channel.addConfirmListener(this);
        channel.addReturnListener(this);
        channel.addShutdownListener(this::shutdown);
    }

    boolean usable() {
        return !dead && channel.isOpen();
    }

    /** True if it closed after being used in the current batch: it must not be replaced before the batch ends. */
    boolean closedInBatch() {
        return usedInBatch && !usable();
    }

    void endOfBatch() {
        usedInBatch = false;
    }

    CompletableFuture<Void> publish(String routingKey, AMQP.BasicProperties props, byte[] body) {
        usedInBatch = true;
        if (!usable()) {
            PublishException cause = closedBy;
            if (cause == null) {
                ShutdownSignalException reason = channel.getCloseReason();
                cause = reason != null ? failureOf(reason)
                        : PublishException.retryable("RabbitMQ channel for exchange " + exchange + " is closed", null);
            }
            return CompletableFuture.failedFuture(cause);
        }
        Pending p = new Pending(props.getMessageId());
        long seq = channel.getNextPublishSeqNo();
        pending.put(seq, p);
        byMessageId.put(p.messageId, p);
        try {
            channel.basicPublish(exchange, routingKey, true, props, body);
        } catch (IOException | RuntimeException e) {
            forget(seq, p);
            dead = true;
            p.future.completeExceptionally(e instanceof ShutdownSignalException closed ? failureOf(closed)
                    : PublishException.retryable("RabbitMQ publish to exchange " + exchange + " failed: " + e, e));
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
        PublishException failure = failureOf(cause);
        closedBy = failure;
        dead = true;
        // unconfirmed messages may or may not have arrived: retrying them is the at-least-once choice
        for (var it = pending.entrySet().iterator(); it.hasNext(); ) {
            Pending p = it.next().getValue();
            it.remove();
            p.future.completeExceptionally(failure);
        }
        byMessageId.clear();
    }

    /** A missing exchange (channel error 404) as such; any other closing as a retryable failure. */
    private PublishException failureOf(ShutdownSignalException cause) {
        PublishException missing = ConfirmPublisher.missingExchange(exchange, cause);
        return missing != null ? missing
                : PublishException.retryable("RabbitMQ channel closed before the confirm: " + cause.getMessage(), cause);
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
