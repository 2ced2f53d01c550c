package io.txbox.relay.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BlockedListener;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import io.txbox.Texts;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.TargetNotFoundException;
import java.io.IOException;
import java.time.Duration;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link RabbitPublisher} does, behind it so that the public class names no RabbitMQ type
 * the JVM must load to verify it: without amqp-client, {@code RabbitPublisher.builder()} can
 * then say which artifact to add instead of failing with {@code NoClassDefFoundError}.
 */
final class ConfirmPublisher {
    private static final Logger log = LoggerFactory.getLogger(ConfirmPublisher.class);

    private final Connection connection;
    private final boolean ownsConnection;
    private final int maxMessageBytes;
    /** Per publishing thread, one confirm channel per exchange. */
    private final ThreadLocal<Map<String, ConfirmChannel>> channels = ThreadLocal.withInitial(HashMap::new);
    private final List<ConfirmChannel> allChannels = new CopyOnWriteArrayList<>();
    private volatile @Nullable String blockedReason;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    ConfirmPublisher(Connection connection, boolean ownsConnection, int maxMessageBytes) {
        this.connection = connection;
        this.ownsConnection = ownsConnection;
        this.maxMessageBytes = maxMessageBytes;
        connection.addBlockedListener(new BlockedListener() {
            @Override
            public void handleBlocked(String reason) {
                blockedReason = reason;
                log.warn("{} - RabbitMQ blocked publishing: {}", connection.getClientProvidedName(), reason);
            }

            @Override
            public void handleUnblocked() {
                blockedReason = null;
                log.info("{} - RabbitMQ unblocked publishing", connection.getClientProvidedName());
            }
        });
    }

    CompletionStage<Void> publish(String exchange, PublishRecord r) {
        if (r.payload().length > maxMessageBytes) {
            return CompletableFuture.failedFuture(PublishException.permanent("message of " + r.payload().length
                    + " bytes is over the RabbitMQ limit of " + maxMessageBytes + " bytes", null));
        }
        String blocked = blockedReason;
        if (blocked != null) {
            // publishing now would block this thread inside the socket write for as long as the alarm lasts
            return CompletableFuture.failedFuture(PublishException.retryable("RabbitMQ connection blocked: " + blocked, null));
        }
        ConfirmChannel ch;
        try {
            ch = channel(exchange);
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(PublishException.retryable("RabbitMQ channel unavailable: " + e, e));
        }
        Map<String, Object> headers = new HashMap<>(r.headers());
        headers.put(RabbitPublisher.IDEMPOTENCY_HEADER, r.stepKey());
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .deliveryMode(2)
                .contentType(r.contentType())
                .messageId(r.stepKey())
                .timestamp(Date.from(r.createdAt()))
                .headers(headers)
                .build();
        return ch.publish(r.routingKey() == null ? "" : r.routingKey(), props, r.payload());
    }

    /**
     * This thread's channel for {@code exchange}. A channel that closed during the current batch
     * is kept until {@link #endOfBatch}, so the rest of the batch fails with its cause instead of
     * overtaking the messages it lost.
     */
    private ConfirmChannel channel(String exchange) throws IOException {
        Map<String, ConfirmChannel> mine = channels.get();
        ConfirmChannel ch = mine.get(exchange);
        if (ch != null && (ch.usable() || ch.closedInBatch())) {
            return ch;
        }
        if (ch != null) {
            allChannels.remove(ch);
            ch.close();
        }
        ch = new ConfirmChannel(connection, exchange);
        mine.put(exchange, ch);
        allChannels.add(ch);
        return ch;
    }

    void endOfBatch() {
        for (ConfirmChannel ch : channels.get().values()) {
            ch.endOfBatch();
        }
    }

    /** Declares {@code exchange} passively on a channel of its own, since a missing exchange closes the channel. */
    void checkTarget(String exchange, Duration timeout) {
        Channel ch;
        try {
            ch = connection.createChannel();
        } catch (IOException | RuntimeException e) {
            throw PublishException.retryable("RabbitMQ channel unavailable: " + e, e);
        }
        if (ch == null) {
            throw PublishException.retryable("no free channel on the RabbitMQ connection", null);
        }
        try {
            ch.asyncCompletableRpc(new AMQP.Exchange.Declare.Builder().exchange(exchange).passive(true).build())
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            TargetNotFoundException missing = e.getCause() instanceof ShutdownSignalException s ? missingExchange(exchange, s) : null;
            throw missing != null ? missing
                    : PublishException.retryable("checking RabbitMQ exchange " + Texts.quote(exchange) + " failed: " + e.getCause(), e);
        } catch (IOException | TimeoutException | RuntimeException e) {
            throw PublishException.retryable("checking RabbitMQ exchange " + Texts.quote(exchange) + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw PublishException.retryable("interrupted while checking RabbitMQ exchange " + Texts.quote(exchange), e);
        } finally {
            try {
                ch.abort();
            } catch (IOException | RuntimeException ignored) {
                // closed by the broker already
            }
        }
    }

    /** The exchange is missing if RabbitMQ closed the channel with 404 NOT_FOUND; null for any other closing. */
    static @Nullable TargetNotFoundException missingExchange(String exchange, ShutdownSignalException cause) {
        if (cause.isHardError() || !(cause.getReason() instanceof AMQP.Channel.Close close) || close.getReplyCode() != 404) {
            return null;
        }
        return new TargetNotFoundException(exchange, "RabbitMQ exchange " + Texts.quote(exchange) + " does not exist ("
                + close.getReplyCode() + " " + close.getReplyText() + "): declare it, or route the destination to an"
                + " existing exchange; its rows wait in the outbox, in order and without counting attempts, and are tried"
                + " again at least every " + TargetNotFoundException.MAX_WAIT_SECONDS + " s", cause);
    }

    void check() {
        if (!connection.isOpen()) {
            throw PublishException.retryable("RabbitMQ connection is closed (recovering)", null);
        }
    }

    void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        allChannels.forEach(ConfirmChannel::close);
        allChannels.clear();
        if (ownsConnection) {
            try {
                connection.close(5_000);
            } catch (IOException | RuntimeException e) {
                log.warn("{} - closing the RabbitMQ connection failed: {}", connection.getClientProvidedName(), e.toString());
            }
        }
    }
}
