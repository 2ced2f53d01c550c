package io.txbox.inbox.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;
import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.ConsumerBuilder;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import io.txbox.internal.Args;
import io.txbox.internal.OptionalDependency;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Consumes a RabbitMQ queue through an {@link Inbox}: each message's handler runs once per
 * idempotency key, and the message is acked only after the database transaction committed.
 *
 * <pre>{@code
 * InboxConsumer consumer = RabbitInboxConsumer.builder(inbox, dataSource, handler)
 *     .connectionFactory(factory)
 *     .queue("shipping-requests")
 *     .build();
 * consumer.start();
 * }</pre>
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>Manual acks, sent after the commit. A crash between the commit and the ack leaves the
 *       message unacked; the broker redelivers it and the inbox reports a duplicate, so the
 *       handler does not run again.
 *   <li>A failed message (handler exception, database unreachable) stays unacked for the
 *       backoff and is then nacked with requeue, so it comes back (flagged redelivered) no
 *       sooner than the backoff: no hot redelivery loop. Because it is never acked before it
 *       is requeued, nothing is lost if the process dies during the delay: the broker requeues
 *       whatever a dead connection held. The cost: a waiting message holds one of the
 *       {@link Builder#prefetch} slots, so keep the prefetch above the number of messages you
 *       expect to be failing at once. (With quorum queues, the queue's {@code delivery-limit}
 *       must exceed the inbox's {@code maxAttempts}, or the broker drops or dead-letters the
 *       message first.)
 *   <li>DEAD messages, reused keys and messages without a usable key are published to the
 *       dead-letter exchange with routing key = the queue name, original body, properties and
 *       headers plus the {@link DeadLetterHeaders}, persistent, mandatory and
 *       publisher-confirmed; the original is acked only after the confirm. An unroutable or
 *       unconfirmed dead letter is retried like a failure.
 *   <li>The connection recovers by itself (the amqp-client's automatic recovery, which must be
 *       enabled on the factory, as it is by default); consumers and the prefetch are restored.
 *       Messages unacked at the time of the loss are redelivered by the broker.
 *   <li>With {@link ConsumerBuilder#batchSize} above 1, each channel hands its deliveries to a
 *       worker thread ({@code txbox-rabbit-<consumer>-batch-<n>}) that runs the ones waiting, up
 *       to the batch size, in one transaction, then acks each; the prefetch must be at least the
 *       batch size.
 *   <li>With the default {@code batchSize(1)} on PostgreSQL (atomic mode), each channel's worker
 *       ({@code txbox-rabbit-<consumer>-chain-<n>}) takes the deliveries waiting, up to the
 *       prefetch, and runs them one transaction each with every {@code COMMIT} sent in the same
 *       round trip as the next message's inbox insert ({@code Inbox.processChained}): one round
 *       trip per message fewer. Messages are acked only after the round trip carrying their
 *       {@code COMMIT} came back: when the chain ends, as one multiple ack (one by one while a
 *       retry's delayed nack is pending); retries and dead letters are as above.
 *       {@link #close()} stops the chain after the message in progress and gives the ones it did
 *       not reach back to the broker.
 *   <li>The handler sees the message's AMQP headers as text (trace context included) and the
 *       broker's redelivered flag.
 * </ul>
 *
 * <p>The queue itself is not declared: it must exist. By default the dead-letter exchange
 * ({@value #DEFAULT_DEAD_LETTER_EXCHANGE}, direct, durable) and a durable queue
 * {@code <queue>}{@value #DEAD_LETTER_QUEUE_SUFFIX} bound to it with the queue name are
 * declared on start.
 */
public interface RabbitInboxConsumer extends InboxConsumer {
    /** Default {@link Builder#deadLetterExchange}: {@value}. */
    String DEFAULT_DEAD_LETTER_EXCHANGE = "txbox.dead-letter";
    /** Suffix of the dead-letter queue declared by default: {@value}. */
    String DEAD_LETTER_QUEUE_SUFFIX = ".dead-letter";
    /** Default {@link Builder#prefetch}: {@value}. */
    int DEFAULT_PREFETCH = 20;
    /** Default {@link Builder#concurrency}: {@value}. */
    int DEFAULT_CONCURRENCY = 1;

    /**
     * A builder for a consumer that runs {@code handler} for each message's first delivery, in
     * a transaction on {@code dataSource}, recorded in {@code inbox}.
     */
    static Builder builder(Inbox inbox, DataSource dataSource, Handler handler) {
        requireClient();
        return new Builder(inbox, dataSource, handler);
    }

    /**
     * A builder for a two-phase consumer ({@link TwoPhaseHandler}): each message is claimed in
     * {@code store}, handled outside any transaction, completed or failed, and then it is acked.
     */
    static Builder builder(TwoPhaseStore store, TwoPhaseHandler handler) {
        requireClient();
        return new Builder(store, handler);
    }

    /**
     * Builds a {@link RabbitInboxConsumer}. Required: {@link #connectionFactory} and
     * {@link #queue}. Not thread-safe.
     */
    final class Builder extends ConsumerBuilder<Builder> {
        @Nullable ConnectionFactory connectionFactory;
        @Nullable String queue;
        int prefetch = DEFAULT_PREFETCH;
        int concurrency = DEFAULT_CONCURRENCY;
        String deadLetterExchange = DEFAULT_DEAD_LETTER_EXCHANGE;
        @Nullable String orderingKeyHeader;
        boolean declareDeadLetterTopology = true;

        private Builder(Inbox inbox, DataSource dataSource, Handler handler) {
            super(inbox, dataSource, handler);
        }

        private Builder(TwoPhaseStore store, TwoPhaseHandler handler) {
            super(store, handler);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Where to connect. Required. The consumer opens its own connection from it, named
         * {@code txbox-<consumer>}. Automatic recovery (with topology recovery) must be enabled,
         * as it is by default.
         */
        public Builder connectionFactory(ConnectionFactory connectionFactory) {
            Args.configured(connectionFactory, "connectionFactory");
            if (!connectionFactory.isAutomaticRecoveryEnabled() || !connectionFactory.isTopologyRecoveryEnabled()) {
                throw new ConfigException("connectionFactory must have automatic and topology recovery enabled, but "
                        + "automaticRecoveryEnabled was " + connectionFactory.isAutomaticRecoveryEnabled()
                        + " and topologyRecoveryEnabled was " + connectionFactory.isTopologyRecoveryEnabled());
            }
            this.connectionFactory = connectionFactory;
            return this;
        }

        /** The queue to consume. Required; it must exist. */
        public Builder queue(String queue) {
            if (queue == null || queue.isEmpty() || queue.length() > 255) {
                throw new ConfigException("queue must be 1 to 255 characters, but was " + Texts.quote(queue));
            }
            this.queue = queue;
            return this;
        }

        /**
         * Unacked messages the broker may hand each channel at once ({@code basic.qos});
         * default {@value RabbitInboxConsumer#DEFAULT_PREFETCH}. 1 to 65535. Messages waiting out
         * a retry backoff count against it.
         */
        public Builder prefetch(int prefetch) {
            if (prefetch < 1 || prefetch > 65535) {
                throw new ConfigException("prefetch must be between 1 and 65535, but was " + prefetch);
            }
            this.prefetch = prefetch;
            return this;
        }

        /**
         * Channels consuming the queue in parallel, each processing one message at a time;
         * default {@value RabbitInboxConsumer#DEFAULT_CONCURRENCY}. 1 to 64. Each holds a
         * database connection while it processes.
         */
        public Builder concurrency(int concurrency) {
            if (concurrency < 1 || concurrency > 64) {
                throw new ConfigException("concurrency must be between 1 and 64, but was " + concurrency);
            }
            this.concurrency = concurrency;
            return this;
        }

        /**
         * The exchange dead letters are published to, with the queue name as routing key;
         * default {@value RabbitInboxConsumer#DEFAULT_DEAD_LETTER_EXCHANGE}. Must not be the
         * default exchange.
         */
        public Builder deadLetterExchange(String deadLetterExchange) {
            if (deadLetterExchange == null || deadLetterExchange.isEmpty() || deadLetterExchange.length() > 255) {
                throw new ConfigException("deadLetterExchange must be 1 to 255 characters, but was "
                        + Texts.quote(deadLetterExchange));
            }
            this.deadLetterExchange = deadLetterExchange;
            return this;
        }

        /**
         * The header a consumer that parks keys ({@code parkKeys(true)}) reads each message's
         * ordering key from; default none: the message's routing key is its ordering key. A
         * message without the header (or with an empty one) has no ordering key, and is
         * dead-lettered as without parking when it goes DEAD.
         */
        public Builder orderingKeyHeader(String orderingKeyHeader) {
            Args.configured(orderingKeyHeader, "orderingKeyHeader");
            if (orderingKeyHeader.isBlank() || orderingKeyHeader.length() > 255) {
                throw new ConfigException("orderingKeyHeader must be 1 to 255 characters and not blank, but was "
                        + Texts.quote(orderingKeyHeader));
            }
            this.orderingKeyHeader = orderingKeyHeader;
            return this;
        }

        /**
         * Whether {@code start()} declares the dead-letter exchange (direct, durable) and the
         * queue {@code <queue>}{@value RabbitInboxConsumer#DEAD_LETTER_QUEUE_SUFFIX} bound to it;
         * default {@code true}. Turn it off when operators own the topology; a dead letter that
         * no queue receives is then retried, never dropped.
         */
        public Builder declareDeadLetterTopology(boolean declare) {
            this.declareDeadLetterTopology = declare;
            return this;
        }

        /**
         * A consumer ready to {@link InboxConsumer#start()}. Creates no connection yet.
         *
         * @throws ConfigException if the connection factory or queue is missing, or
         *     {@code batchSize} exceeds the prefetch
         */
        public RabbitInboxConsumer build() {
            if (connectionFactory == null) {
                throw new ConfigException("connectionFactory must be set");
            }
            if (queue == null) {
                throw new ConfigException("queue must be set");
            }
            if (batchSize() > prefetch) {
                throw new ConfigException("batchSize " + batchSize() + " exceeds prefetch " + prefetch
                        + ": a batch is taken from one channel's prefetched messages and could never fill; "
                        + "raise prefetch to at least " + batchSize() + " or lower batchSize");
            }
            return new RabbitRunner(processor(), connectionFactory, queue, prefetch, concurrency, deadLetterExchange,
                    declareDeadLetterTopology, orderingKeyHeader);
        }
    }

    /** Refuses to go on without the broker client, naming the artifact to add. */
    private static void requireClient() {
        OptionalDependency.require("com.rabbitmq.client.ConnectionFactory", "com.rabbitmq:amqp-client",
                "RabbitInboxConsumer");
    }
}
