package io.txbox.inbox.kafka;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.ConsumerBuilder;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.internal.Args;
import io.txbox.internal.OptionalDependency;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.jspecify.annotations.Nullable;

/**
 * Consumes Kafka topics through an {@link Inbox}: each record's handler runs once per
 * idempotency key, and offsets are committed only after the database transaction committed.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.builder("payments").build();
 * InboxConsumer consumer = KafkaInboxConsumer.builder(inbox, dataSource, (tx, message) -> {
 *         chargeCard(tx, message.payload());
 *         return null;
 *     })
 *     .bootstrapServers("kafka:9092")
 *     .topics("payment-requests")
 *     .build();
 * consumer.start();
 * ...
 * consumer.close();
 * }</pre>
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>One thread ({@code txbox-kafka-<consumer>}) polls and processes records in offset order
 *       per partition, one database transaction per record, or with
 *       {@link ConsumerBuilder#batchSize} above 1 up to that many records of one partition of one
 *       poll in one transaction (falling back to one transaction per record when any of them
 *       fails, so per-partition order and the failure handling below stay the same).
 *   <li>Offsets are committed only for records whose transaction ended: asynchronously after
 *       each polled batch ({@code commitAsync}, so the next poll does not wait for the broker's
 *       answer; a failed one is sent again after the next poll), and synchronously, including any
 *       not yet confirmed, on partition revocation and on close, so after a rebalance or a
 *       graceful close a partition's next owner starts after every record this consumer
 *       finished. A crash between the database commit and the offset commit (or before an
 *       asynchronous commit arrived) redelivers the record; the inbox reports it as a duplicate
 *       and the handler does not run again. A lost partition likewise.
 *   <li>A failed record (handler exception, database unreachable) pauses only its partition:
 *       the consumer seeks back to it and resumes the partition after the backoff, while
 *       polling (and so group membership) and the other partitions go on. Records behind it
 *       in the same partition wait, which keeps per-partition order.
 *   <li>A rebalance does not wait for the rest of a polled batch: between two records (at most
 *       once per {@link Builder#pollTimeout poll timeout}) the consumer takes part in a pending
 *       rebalance, commits what it has done on the partitions it gives up and skips the rest
 *       of their batch, which their new owner reads from the committed offset. With the
 *       default cooperative assignor the partitions it keeps go on meanwhile.
 *   <li>A record that is DEAD in the inbox, reused its key with another payload, or has a
 *       missing or malformed key (under {@link KeyPolicy#DEAD_LETTER}) is produced to the
 *       dead-letter topic with its original key, payload and headers plus the
 *       {@link DeadLetterHeaders}, and its offset is committed once the broker acknowledged
 *       that record ({@code acks=all}, idempotent producer). If the dead-letter produce fails,
 *       the record is retried like a failure.
 *   <li>The handler sees the record's headers as UTF-8 text (trace context included). Kafka
 *       has no redelivered flag, so {@code InboundMessage.redelivered()} is always {@code false};
 *       a redelivery shows as a DUPLICATE outcome instead.
 *   <li>Consumer settings forced by txbox: {@code enable.auto.commit=false}, byte-array
 *       deserializers. Defaults that you may override: {@code isolation.level=read_committed},
 *       {@code auto.offset.reset=earliest}, {@code max.poll.records=}{@value #DEFAULT_MAX_POLL_RECORDS},
 *       and, unless {@code group.protocol=consumer}, {@code partition.assignment.strategy=}
 *       {@code CooperativeStickyAssignor} (incremental rebalances; a group that ran Kafka's
 *       default list, which includes it, switches in one rolling restart). Keep the slowest
 *       handler well below {@code max.poll.interval.ms}.
 * </ul>
 */
public interface KafkaInboxConsumer extends InboxConsumer {
    /** Default dead-letter topic: the record's topic followed by {@value}. */
    String DEFAULT_DEAD_LETTER_SUFFIX = ".DLT";
    /** Default {@link Builder#pollTimeout}: 500 ms. */
    Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(500);
    /** Default {@code max.poll.records} unless set: {@value}. */
    int DEFAULT_MAX_POLL_RECORDS = 100;

    /**
     * A builder for a consumer that runs {@code handler} for each record's first delivery, in
     * a transaction on {@code dataSource}, recorded in {@code inbox}.
     */
    static Builder builder(Inbox inbox, DataSource dataSource, Handler handler) {
        requireClient();
        return new Builder(inbox, dataSource, handler);
    }

    /**
     * A builder for a two-phase consumer ({@link TwoPhaseHandler}): each record is claimed in
     * {@code store}, handled outside any transaction, completed or failed, and then its offset is committed.
     */
    static Builder builder(TwoPhaseStore store, TwoPhaseHandler handler) {
        requireClient();
        return new Builder(store, handler);
    }

    /**
     * Builds a {@link KafkaInboxConsumer}. Required: {@link #bootstrapServers} (or the
     * {@code bootstrap.servers} consumer property) and {@link #topics}. Not thread-safe.
     */
    final class Builder extends ConsumerBuilder<Builder> {
        private static final Set<String> OWNED = Set.of(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG);
        private static final Set<String> OWNED_PRODUCER = Set.of(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);

        final Map<String, Object> consumerProperties = new LinkedHashMap<>();
        final Map<String, Object> producerProperties = new LinkedHashMap<>();
        List<String> topics = List.of();
        @Nullable String deadLetterTopic;
        Duration pollTimeout = DEFAULT_POLL_TIMEOUT;

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

        /** The brokers, for the consumer and the dead-letter producer. Required. */
        public Builder bootstrapServers(String bootstrapServers) {
            if (bootstrapServers == null || bootstrapServers.isBlank()) {
                throw new ConfigException("bootstrapServers must not be blank, but was " + Texts.quote(bootstrapServers));
            }
            consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            return this;
        }

        /** The topics to subscribe to. Required, at least one. */
        public Builder topics(String... topics) {
            return topics(topics == null ? null : List.of(topics));
        }

        /** The topics to subscribe to. Required, at least one. */
        public Builder topics(@Nullable Collection<String> topics) {
            if (topics == null || topics.isEmpty()) {
                throw new ConfigException("topics must name at least one topic, but was " + topics);
            }
            for (String t : topics) {
                if (t == null || t.isBlank()) {
                    throw new ConfigException("topics must not contain a blank name, but was " + topics);
                }
            }
            this.topics = List.copyOf(topics);
            return this;
        }

        /** The consumer group; default the inbox's consumer name. */
        public Builder groupId(String groupId) {
            if (groupId == null || groupId.isBlank()) {
                throw new ConfigException("groupId must not be blank, but was " + Texts.quote(groupId));
            }
            consumerProperties.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
            return this;
        }

        /**
         * Sets one Kafka consumer property (security, timeouts, {@code group.protocol}, ...).
         * Refused: the deserializers (records are read as bytes) and
         * {@code enable.auto.commit=true} (offsets are committed after the database commit).
         */
        public Builder consumerProperty(String name, Object value) {
            refuseOwned(OWNED, "consumer", name, value);
            if (ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG.equals(name)
                    && !"false".equals(String.valueOf(value).trim().toLowerCase(Locale.ROOT))) {
                throw new ConfigException("consumer property enable.auto.commit must be false: offsets are committed "
                        + "after the database commit, but was " + Texts.quote(String.valueOf(value)));
            }
            consumerProperties.put(name, value);
            return this;
        }

        /**
         * Sets one property of the dead-letter producer. By default it uses the consumer's
         * {@code bootstrap.servers}, {@code acks=all} and idempotence. Refused: the serializers.
         */
        public Builder producerProperty(String name, Object value) {
            refuseOwned(OWNED_PRODUCER, "producer", name, value);
            producerProperties.put(name, value);
            return this;
        }

        /** Refuses a missing name or value, and a property txbox sets itself ({@code owned}). */
        private static void refuseOwned(Set<String> owned, String client, String name, Object value) {
            Args.configured(name, client + " property name");
            Args.configured(value, "value of " + client + " property " + name);
            if (owned.contains(name)) {
                throw new ConfigException(client + " property " + name + " is set by txbox (byte arrays), but was given "
                        + Texts.quote(String.valueOf(value)));
            }
        }

        /**
         * The one topic every dead letter goes to; default the record's topic followed by
         * {@value KafkaInboxConsumer#DEFAULT_DEAD_LETTER_SUFFIX}.
         */
        public Builder deadLetterTopic(String deadLetterTopic) {
            if (deadLetterTopic == null || deadLetterTopic.isBlank()) {
                throw new ConfigException("deadLetterTopic must not be blank, but was " + Texts.quote(deadLetterTopic));
            }
            this.deadLetterTopic = deadLetterTopic;
            return this;
        }

        /**
         * What to do with a record whose key header is missing or malformed; default
         * {@link KeyPolicy#DEAD_LETTER}. {@link KeyPolicy#TRANSPORT_COORDINATES} keys it by
         * {@code topic-partition-offset}: see its caveats.
         */
        public Builder keyPolicy(KeyPolicy keyPolicy) {
            setKeyPolicy(keyPolicy);
            return this;
        }

        /**
         * The longest a single {@code poll} blocks, which bounds how late a paused partition is
         * resumed and how long {@code close()} waits for the poll; default 500 ms. 1 ms to 1 min.
         */
        public Builder pollTimeout(Duration pollTimeout) {
            Args.configured(pollTimeout, "pollTimeout");
            if (pollTimeout.compareTo(Duration.ofMillis(1)) < 0 || pollTimeout.compareTo(Duration.ofMinutes(1)) > 0) {
                throw new ConfigException("pollTimeout must be between 1 ms and 1 minute, but was " + pollTimeout);
            }
            this.pollTimeout = pollTimeout;
            return this;
        }

        /**
         * A consumer ready to {@link InboxConsumer#start()}. Creates no connection yet.
         *
         * @throws ConfigException if bootstrap servers or topics are missing, or {@code batchSize}
         *     exceeds {@code max.poll.records}
         */
        public KafkaInboxConsumer build() {
            if (!consumerProperties.containsKey(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG)) {
                throw new ConfigException("bootstrapServers must be set");
            }
            if (topics.isEmpty()) {
                throw new ConfigException("topics must be set");
            }
            Map<String, Object> consumerConfig = consumerConfig();
            Object maxPollRecords = consumerConfig.get(ConsumerConfig.MAX_POLL_RECORDS_CONFIG);
            int maxPoll;
            try {
                maxPoll = Integer.parseInt(String.valueOf(maxPollRecords).trim());
            } catch (NumberFormatException e) {
                throw new ConfigException("consumer property max.poll.records must be a whole number, but was "
                        + Texts.quote(String.valueOf(maxPollRecords)));
            }
            if (batchSize() > maxPoll) {
                throw new ConfigException("batchSize " + batchSize() + " exceeds max.poll.records " + maxPoll
                        + ": a batch is taken from one poll and could never fill; set the consumer property "
                        + "max.poll.records to at least " + batchSize() + " or lower batchSize");
            }
            return new KafkaRunner(processor(), List.copyOf(new ArrayList<>(topics)), deadLetterTopic, pollTimeout,
                    consumerConfig, producerConfig());
        }

        private Map<String, Object> consumerConfig() {
            Map<String, Object> config = new LinkedHashMap<>();
            config.put(ConsumerConfig.GROUP_ID_CONFIG, consumer());
            config.put(ConsumerConfig.CLIENT_ID_CONFIG, "txbox-" + consumer());
            config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, DEFAULT_MAX_POLL_RECORDS);
            // The broker-side protocol assigns partitions itself and refuses this setting.
            if (!"consumer".equalsIgnoreCase(String.valueOf(consumerProperties.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG)))) {
                config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                        org.apache.kafka.clients.consumer.CooperativeStickyAssignor.class.getName());
            }
            config.putAll(consumerProperties);
            config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                    org.apache.kafka.common.serialization.ByteArrayDeserializer.class);
            config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                    org.apache.kafka.common.serialization.ByteArrayDeserializer.class);
            return config;
        }

        private Map<String, Object> producerConfig() {
            Map<String, Object> config = new LinkedHashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                    consumerProperties.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG));
            config.put(ProducerConfig.CLIENT_ID_CONFIG, "txbox-" + consumer() + "-dlt");
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            config.putAll(producerProperties);
            config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                    org.apache.kafka.common.serialization.ByteArraySerializer.class);
            config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                    org.apache.kafka.common.serialization.ByteArraySerializer.class);
            return config;
        }
    }

    /** Refuses to go on without the broker client, naming the artifact to add. */
    private static void requireClient() {
        OptionalDependency.require("org.apache.kafka.clients.consumer.KafkaConsumer", "org.apache.kafka:kafka-clients",
                "KafkaInboxConsumer");
    }
}
