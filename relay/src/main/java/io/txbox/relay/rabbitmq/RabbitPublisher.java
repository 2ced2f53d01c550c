package io.txbox.relay.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AuthenticationFailureException;
import com.rabbitmq.client.BlockedListener;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import io.txbox.ConfigException;
import io.txbox.relay.internal.TargetNames;
import io.txbox.Texts;
import io.txbox.internal.Args;
import io.txbox.internal.OptionalDependency;
import io.txbox.internal.ServerUrls;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
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
 * Publishes outbox rows to RabbitMQ exchanges with publisher confirms: each relay worker thread
 * has its own channel in confirm mode per exchange with a whole batch in flight, and a row
 * counts as sent only when its ack arrives. Messages are published {@code mandatory}: one the
 * exchange cannot route comes back as a basic.return and is retried (and dead-lettered past the
 * maximum attempts), never acked into nowhere.
 *
 * <p>A missing exchange fails its rows with {@link TargetNotFoundException}: they wait without
 * counting attempts, and since every exchange has its own channel, the channel error costs no
 * other exchange a message, a retry or its order. {@link #checkTarget} declares the exchange
 * passively, so health reports a missing exchange before any row goes to it.
 *
 * <p>Every message is persistent (delivery mode 2) with routing key = the row's routing key
 * (empty when it has none), {@code messageId} = the step key, {@code contentType} when set, and
 * {@link PublishRecord#headers()} as AMQP headers plus {@value #IDEMPOTENCY_HEADER}.
 *
 * <pre>{@code
 * RabbitPublisher rabbit = RabbitPublisher.builder().uri("amqp://guest:guest@localhost").build();
 * Relay.builder().dataSource(ds).route("shipping", rabbit.exchange("shipping")).build();
 * }</pre>
 *
 * <p>amqp-client is an optional dependency of txbox-relay: without it on the class path, {@link
 * #builder()} throws a {@link ConfigException} naming {@code com.rabbitmq:amqp-client}.
 */
public final class RabbitPublisher implements Publisher {
    /** Broker tag in metrics: {@value}. */
    public static final String BROKER = "rabbitmq";
    /**
     * Header carrying the step key, RabbitMQ's conventional name: {@value}. Every message also
     * carries it as {@code idempotency-key} ({@code OutboxMessage.IDEMPOTENCY_KEY_HEADER}), as
     * on Kafka: a consumer may read either.
     */
    public static final String IDEMPOTENCY_HEADER = "x-idempotency-key";
    /** Default largest message body: 16 MiB, RabbitMQ 4's default {@code max_message_size}. */
    public static final int DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

    // The RabbitMQ types are used only in ConfirmPublisher and the Builder: this class must load without amqp-client.
    private final ConfirmPublisher impl;

    private RabbitPublisher(ConfirmPublisher impl) {
        this.impl = impl;
    }

    /**
     * A builder for a publisher on a connection it opens or one the caller gives.
     *
     * @throws ConfigException if amqp-client is not on the class path
     */
    public static Builder builder() {
        OptionalDependency.require("com.rabbitmq.client.ConnectionFactory", "com.rabbitmq:amqp-client", "RabbitPublisher");
        return new Builder();
    }

    /**
     * A route to {@code exchange} ({@code ""} is not allowed, use a named exchange). The relay
     * does not declare it: until it exists, the route's rows wait (see {@link TargetNotFoundException}).
     */
    public Route exchange(String exchange) {
        return Route.of(this, TargetNames.rabbitExchange(exchange));
    }

    @Override
    public String broker() {
        return BROKER;
    }

    @Override
    public CompletionStage<Void> publish(String exchange, PublishRecord r) {
        Args.notNull(exchange, "exchange");
        Args.notNull(r, "record");
        return impl.publish(exchange, r);
    }

    @Override
    public void endOfBatch() {
        impl.endOfBatch();
    }

    /**
     * Declares {@code exchange} passively on a channel of its own, since a missing exchange
     * closes the channel.
     *
     * @throws TargetNotFoundException if the exchange does not exist
     */
    @Override
    public void checkTarget(String exchange, Duration timeout) {
        Args.notNull(exchange, "exchange");
        Args.notNull(timeout, "timeout");
        impl.checkTarget(exchange, timeout);
    }

    @Override
    public void check(Duration timeout) {
        Args.notNull(timeout, "timeout");
        impl.check();
    }

    @Override
    public void close() {
        impl.close();
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

        /**
         * Connection settings as an {@code amqp://} or {@code amqps://} URI, {@code
         * amqp://user:password@host:port/vhost}; the default virtual host {@code /} is written
         * {@code %2f}, and {@code amqp://host/} names the empty virtual host, which RabbitMQ does
         * not have. The URI must name a host and, if it has one, a port from 1 to 65535: a URI
         * the RabbitMQ client would silently read as {@code localhost:5672} as {@code guest} (a
         * port that is not a number, a host name with an underscore) is refused.
         *
         * @throws ConfigException naming the URI (password masked) and what is wrong with it
         */
        public Builder uri(String uri) {
            this.factory = parseUri(Args.configured(uri, "uri"));
            return this;
        }

        /**
         * The rule of {@link #uri}: a factory for a well-formed {@code amqp://} or {@code
         * amqps://} URI with a host and a valid port, else a {@link ConfigException}.
         */
        private static ConnectionFactory parseUri(String uri) {
            if (uri == null) {
                throw new ConfigException("RabbitMQ uri must not be null");
            }
            String problem = ServerUrls.problem(uri, "amqp", "amqps");
            ConnectionFactory f = new ConnectionFactory();
            if (problem == null) {
                try {
                    f.setUri(uri);
                } catch (Exception e) {
                    problem = "is refused by the RabbitMQ client: " + Texts.redactUrl(String.valueOf(e.getMessage()));
                }
            }
            if (problem != null) {
                throw new ConfigException("RabbitMQ uri " + Texts.quote(Texts.redactUrl(uri)) + " " + problem
                        + "; write it as amqp://user:password@host:5672/vhost (the default virtual host / is %2f)");
            }
            return f;
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
         * @throws PublishException if RabbitMQ cannot be reached or refuses the connection now
         *     (retryable); the message carries the broker's reason (virtual host not found, access
         *     refused) and what to do about it
         */
        public RabbitPublisher build() {
            if (connection != null) {
                return new RabbitPublisher(new ConfirmPublisher(connection, false, maxMessageBytes));
            }
            if (factory == null) {
                throw new ConfigException("RabbitMQ connectionFactory or uri is required");
            }
            ConnectionFactory f = factory.clone();
            f.setAutomaticRecoveryEnabled(true);
            f.setTopologyRecoveryEnabled(false);
            try {
                return new RabbitPublisher(new ConfirmPublisher(f.newConnection(connectionName), true, maxMessageBytes));
            } catch (IOException | TimeoutException e) {
                throw PublishException.retryable("cannot connect to RabbitMQ at " + f.getHost() + ":" + f.getPort()
                        + ", virtual host " + Texts.quote(f.getVirtualHost()) + ", user " + Texts.quote(f.getUsername())
                        + ": " + refusal(e), e);
            }
        }

        /** The broker's own reason for refusing a connection (the client hides it in a cause), with what to do. */
        static String refusal(Exception e) {
            for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
                if (t instanceof AuthenticationFailureException) {
                    return t.getMessage() + "; check the user and password";
                }
                if (t instanceof ShutdownSignalException s && s.getReason() instanceof AMQP.Connection.Close close) {
                    String text = close.getReplyText();
                    String hint;
                    if (text.contains("vhost") && text.contains("not found")) {
                        hint = "create the virtual host, or fix it in the URI: the default virtual host / is written %2f"
                                + " (amqp://host:5672/%2f), and amqp://host:5672/ names the empty virtual host";
                    } else if (text.contains("access to vhost")) {
                        hint = "give the user permissions on the virtual host (rabbitmqctl set_permissions)";
                    } else {
                        hint = "see the broker log";
                    }
                    return "RabbitMQ refused: " + close.getReplyCode() + " " + text + "; " + hint;
                }
            }
            return e + "; check the host and port, and that RabbitMQ is running";
        }
    }
}
