package io.txbox.relay.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ReturnListener;
import com.rabbitmq.client.ShutdownSignalException;
import io.txbox.relay.PublishException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
 *
 * <p>The unconfirmed messages are a queue in sequence order under this object's lock, shared by
 * the publishing thread and the connection's reader thread (acks, nacks, returns): an ack
 * (multiple or not) settles from the head, which is where RabbitMQ's confirms arrive.
 */
final class ConfirmChannel implements ConfirmListener, ReturnListener {
    private final Channel channel;
    private final String exchange;
    /** Unconfirmed publishes in sequence order; guarded by {@code this}. */
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    /** The same, by message id, for returns; guarded by {@code this}. */
    private final Map<String, Pending> byMessageId = new HashMap<>();
    private volatile boolean dead;
    private volatile @Nullable PublishException closedBy;
    /** Set by a publish, cleared at the end of each batch; only the owning thread touches it. */
    private boolean usedInBatch;

    private static final class Pending {
        final long seq;
        final String messageId;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        /** Guarded by the channel's lock. */
        @Nullable String returned;

        Pending(long seq, String messageId) {
            this.seq = seq;
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
        Pending p = new Pending(channel.getNextPublishSeqNo(), props.getMessageId());
        synchronized (this) {
            pending.addLast(p);
            byMessageId.put(p.messageId, p);
        }
        try {
            channel.basicPublish(exchange, routingKey, true, props, body);
        } catch (IOException | RuntimeException e) {
            forget(p);
            dead = true;
            p.future.completeExceptionally(e instanceof ShutdownSignalException closed ? failureOf(closed)
                    : PublishException.retryable("RabbitMQ publish to exchange " + exchange + " failed: " + e, e));
        }
        return p.future;
    }

    @Override
    public void handleReturn(int replyCode, String replyText, String exchange, String routingKey,
            AMQP.BasicProperties properties, byte[] body) {
        if (properties.getMessageId() == null) {
            return;
        }
        String why = "returned by RabbitMQ: " + replyCode + " " + replyText + " (exchange " + exchange
                + ", routing key " + routingKey + ")";
        synchronized (this) {
            Pending p = byMessageId.get(properties.getMessageId());
            if (p != null) {
                p.returned = why;
            }
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
        List<Pending> done = new ArrayList<>();
        List<@Nullable String> why = new ArrayList<>();
        synchronized (this) {
            if (multiple) {
                for (Pending head = pending.peekFirst(); head != null && head.seq <= tag; head = pending.peekFirst()) {
                    pending.pollFirst();
                    settled(head, failure, done, why);
                }
            } else {
                for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
                    Pending p = it.next();
                    if (p.seq == tag) {
                        it.remove();
                        settled(p, failure, done, why);
                        break;
                    }
                    if (p.seq > tag) {
                        break;
                    }
                }
            }
        }
        // completed outside the lock: a future's dependants run on this thread and must not keep the publisher waiting for it
        for (int i = 0; i < done.size(); i++) {
            String w = why.get(i);
            if (w == null) {
                done.get(i).future.complete(null);
            } else {
                done.get(i).future.completeExceptionally(PublishException.retryable(w, null));
            }
        }
    }

    /** Under the lock: {@code p} is answered; collects it and its failure (null if confirmed). */
    private void settled(Pending p, @Nullable String failure, List<Pending> done, List<@Nullable String> why) {
        byMessageId.remove(p.messageId, p);
        done.add(p);
        why.add(failure != null ? failure : p.returned);
    }

    private void shutdown(ShutdownSignalException cause) {
        PublishException failure = failureOf(cause);
        closedBy = failure;
        dead = true;
        // unconfirmed messages may or may not have arrived: retrying them is the at-least-once choice
        List<Pending> lost;
        synchronized (this) {
            lost = new ArrayList<>(pending);
            pending.clear();
            byMessageId.clear();
        }
        for (Pending p : lost) {
            p.future.completeExceptionally(failure);
        }
    }

    /** A missing exchange (channel error 404) as such; any other closing as a retryable failure. */
    private PublishException failureOf(ShutdownSignalException cause) {
        PublishException missing = ConfirmPublisher.missingExchange(exchange, cause);
        return missing != null ? missing
                : PublishException.retryable("RabbitMQ channel closed before the confirm: " + cause.getMessage(), cause);
    }

    private synchronized void forget(Pending p) {
        pending.removeLastOccurrence(p);
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
