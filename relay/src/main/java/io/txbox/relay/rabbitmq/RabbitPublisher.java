package io.txbox.relay.rabbitmq;

import io.txbox.internal.Args;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BlockedListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
import java.io.IOException;
import java.time.Duration;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox rows to RabbitMQ exchanges with publisher confirms: each relay worker thread
 * has its own channel in confirm mode with a whole batch in flight, and a row counts as sent
 * only when its ack arrives. Messages are published {@code mandatory}: one the exchange cannot
 * route comes back as a basic.return and is retried (and dead-lettered past the maximum
 * attempts), never acked into nowhere.
 *
 * <p>Every message is persistent (delivery mode 2) with routing key = the row's routing key
 * (empty when it has none), {@code messageId} = the step key, {@code contentType} when set, and
 * {@link PublishRecord#headers()} as AMQP headers plus {@value #IDEMPOTENCY_HEADER}.
 *
 * <pre>{@code
 * RabbitPublisher rabbit = RabbitPublisher.builder().uri("amqp://guest:guest@localhost").build();
 * Relay.builder().dataSource(ds).route("shipping", rabbit.exchange("shipping")).build();
 * }</pre>
 */
public final class RabbitPublisher implements Publisher {
    /** Broker tag in metrics: {@value}. */
    public static final String BROKER = "rabbitmq";
    /** Header carrying the step key, RabbitMQ's conventional name: {@value}. */
    public static final String IDEMPOTENCY_HEADER = "x-idempotency-key";
    /** Default largest message body: 16 MiB, RabbitMQ 4's default {@code max_message_size}. */
    public static final int DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

    private static final Logger log = LoggerFactory.getLogger(RabbitPublisher.class);

    private final Connection connection;
    private final boolean ownsConnection;
    private final int maxMessageBytes;
    private final ThreadLocal<@Nullable ConfirmChannel> channels = new ThreadLocal<>();
    private final List<ConfirmChannel> allChannels = new CopyOnWriteArrayList<>();
    private volatile @Nullable String blockedReason;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    private RabbitPublisher(Connection connection, boolean ownsConnection, int maxMessageBytes) {
        this.connection = connection;
        this.ownsConnection = ownsConnection;
        this.maxMessageBytes = maxMessageBytes;
        connection.addBlockedListener(new BlockedListener() {
            @Override
            public void handleBlocked(String reason) {
                blockedReason = reason;
                log.warn("[{}] RabbitMQ blocked publishing: {}", connection.getClientProvidedName(), reason);
            }

            @Override
            public void handleUnblocked() {
                blockedReason = null;
                log.info("[{}] RabbitMQ unblocked publishing", connection.getClientProvidedName());
            }
        });
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A route to {@code exchange} (which must exist; {@code ""} is not allowed, use a named exchange). */
    public Route exchange(String exchange) {
        if (exchange == null || exchange.isEmpty() || exchange.length() > 255) {
            throw new ConfigException("RabbitMQ exchange must be 1-255 characters, but was "
                    + (exchange == null ? "null" : Texts.quote(exchange)));
        }
        return Route.of(this, exchange);
    }

    @Override
    public String broker() {
        return BROKER;
    }

    @Override
    public CompletionStage<Void> publish(String exchange, PublishRecord r) {
        Args.notNull(exchange, "exchange");
        Args.notNull(r, "record");
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
            ch = channel();
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(PublishException.retryable("RabbitMQ channel unavailable: " + e, e));
        }
        Map<String, Object> headers = new HashMap<>(r.headers());
        headers.put(IDEMPOTENCY_HEADER, r.stepKey());
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .deliveryMode(2)
                .contentType(r.contentType())
                .messageId(r.stepKey())
                .timestamp(Date.from(r.createdAt()))
                .headers(headers)
                .build();
        return ch.publish(exchange, r.routingKey() == null ? "" : r.routingKey(), props, r.payload());
    }

    private ConfirmChannel channel() throws IOException {
        ConfirmChannel ch = channels.get();
        if (ch != null && ch.usable()) {
            return ch;
        }
        if (ch != null) {
            allChannels.remove(ch);
            ch.close();
        }
        ch = new ConfirmChannel(connection);
        channels.set(ch);
        allChannels.add(ch);
        return ch;
    }

    @Override
    public void check(Duration timeout) {
        Args.notNull(timeout, "timeout");
        if (!connection.isOpen()) {
            throw PublishException.retryable("RabbitMQ connection is closed (recovering)", null);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        allChannels.forEach(ConfirmChannel::close);
        allChannels.clear();
        if (ownsConnection) {
            try {
                connection.close(5_000);
            } catch (IOException | RuntimeException e) {
                log.warn("[{}] closing the RabbitMQ connection failed: {}", connection.getClientProvidedName(), e.toString());
            }
        }
    }

    /** Configures the connection a {@link RabbitPublisher} uses. */
    public static final class Builder {
        private @Nullable ConnectionFactory factory;
        private @Nullable Connection connection;
        private String connectionName = "txbox-relay";
        private int maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;

        Builder() {}

        /**
         * Connection settings (host, credentials, TLS, timeouts). The publisher opens and owns one
         * connection from it, with automatic recovery turned on.
         */
        public Builder connectionFactory(ConnectionFactory factory) {
            if (factory == null) {
                throw new ConfigException("connectionFactory must not be null");
            }
            this.factory = factory;
            return this;
        }

        /** Connection settings as an {@code amqp://} or {@code amqps://} URI. */
        public Builder uri(String uri) {
            Args.configured(uri, "uri");
            ConnectionFactory f = new ConnectionFactory();
            try {
                f.setUri(uri);
            } catch (Exception e) {
                // the URI may hold a password: name the problem, not the value
                throw new ConfigException("RabbitMQ uri is not a valid amqp:// URI: " + e.getClass().getSimpleName());
            }
            this.factory = f;
            return this;
        }

        /** An open connection the caller owns; {@link RabbitPublisher#close()} leaves it open. */
        public Builder connection(Connection connection) {
            if (connection == null) {
                throw new ConfigException("connection must not be null");
            }
            this.connection = connection;
            return this;
        }

        /** Name shown in the RabbitMQ management UI; default {@code txbox-relay}. */
        public Builder connectionName(String connectionName) {
            Args.configured(connectionName, "connectionName");
            if (connectionName == null || connectionName.isBlank()) {
                throw new ConfigException("connectionName must be non-blank");
            }
            this.connectionName = connectionName;
            return this;
        }

        /** Larger payloads are dead-lettered without a try; default {@value #DEFAULT_MAX_MESSAGE_BYTES}. */
        public Builder maxMessageBytes(int maxMessageBytes) {
            if (maxMessageBytes < 1) {
                throw new ConfigException("maxMessageBytes must be at least 1, but was " + maxMessageBytes);
            }
            this.maxMessageBytes = maxMessageBytes;
            return this;
        }

        /**
         * Opens the connection (unless one was given).
         *
         * @throws PublishException if RabbitMQ cannot be reached now (retryable)
         */
        public RabbitPublisher build() {
            if (connection != null) {
                return new RabbitPublisher(connection, false, maxMessageBytes);
            }
            if (factory == null) {
                throw new ConfigException("RabbitMQ connectionFactory or uri is required");
            }
            ConnectionFactory f = factory.clone();
            f.setAutomaticRecoveryEnabled(true);
            f.setTopologyRecoveryEnabled(false);
            try {
                return new RabbitPublisher(f.newConnection(connectionName), true, maxMessageBytes);
            } catch (IOException | TimeoutException e) {
                throw PublishException.retryable("cannot connect to RabbitMQ at " + f.getHost() + ":" + f.getPort() + ": " + e, e);
            }
        }
    }
}
