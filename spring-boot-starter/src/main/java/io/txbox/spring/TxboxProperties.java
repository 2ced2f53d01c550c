package io.txbox.spring;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

/**
 * The {@code txbox.*} properties. Every default equals the library's public constant. Values
 * are checked by the txbox builders when the beans are created; a refused value fails startup
 * with a message naming the property and the value.
 */
@ConfigurationProperties(prefix = TxboxProperties.PREFIX)
public class TxboxProperties {
    /** The property prefix: {@value}. */
    public static final String PREFIX = "txbox";
    /** Consumer name used when neither {@code txbox.inbox.consumer} nor {@code spring.application.name} is set: {@value}. */
    public static final String DEFAULT_CONSUMER = "application";

    /**
     * Schema holding the txbox tables: a lower-case letter or underscore first, then lower-case
     * letters, digits or underscores, at most 48 characters.
     */
    private String schema = TxboxTables.DEFAULT_SCHEMA;

    /** Table-name prefix, same alphabet as the schema, at most 24 characters; may be empty. */
    private String prefix = TxboxTables.DEFAULT_PREFIX;

    /**
     * How the txbox tables are created at startup. "txbox" runs txbox's own migrations with
     * their own history table (prefix + "schema_history", in the txbox schema); "flyway" adds
     * txbox's scripts and placeholders to Spring Boot's Flyway (Boot 4, spring-boot-flyway);
     * "none" creates nothing.
     */
    private MigrationsMode migrations = MigrationsMode.TXBOX;

    private final InboxProperties inbox = new InboxProperties();

    private final OutboxProperties outbox = new OutboxProperties();

    private final RelayProperties relay = new RelayProperties();

    @NestedConfigurationProperty
    private final TxboxHttpProperties http = new TxboxHttpProperties();

    public String getSchema() {
        return schema;
    }

    public void setSchema(String schema) {
        this.schema = schema;
    }

    public String getPrefix() {
        return prefix;
    }

    public void setPrefix(String prefix) {
        this.prefix = prefix;
    }

    public MigrationsMode getMigrations() {
        return migrations;
    }

    public void setMigrations(MigrationsMode migrations) {
        this.migrations = migrations;
    }

    public InboxProperties getInbox() {
        return inbox;
    }

    public OutboxProperties getOutbox() {
        return outbox;
    }

    public TxboxHttpProperties getHttp() {
        return http;
    }

    public RelayProperties getRelay() {
        return relay;
    }

    /** How the txbox tables are created at startup. */
    public enum MigrationsMode {
        /** {@code TxboxMigrations.migrate} with txbox's own history table. */
        TXBOX,
        /** txbox's location and placeholders added to Spring Boot's Flyway. */
        FLYWAY,
        /** Nothing is created; the tables are managed elsewhere. */
        NONE
    }

    /** The {@code txbox.inbox.*} properties. */
    public static class InboxProperties {
        /**
         * Consumer name stored in every inbox entry: 1 to 128 characters from A-Z a-z 0-9 . _ :
         * / -. Defaults to spring.application.name, else "application". Changing it starts an
         * empty inbox.
         */
        private @Nullable String consumer;

        /** Failures after which an inbox entry is DEAD. At least 1. */
        private int maxAttempts = Inbox.DEFAULT_MAX_ATTEMPTS;

        /** Largest inbound payload (and stored result) accepted, in bytes. At least 0. */
        private int maxPayloadBytes = Inbox.DEFAULT_MAX_PAYLOAD_BYTES;

        public @Nullable String getConsumer() {
            return consumer;
        }

        public void setConsumer(@Nullable String consumer) {
            this.consumer = consumer;
        }

        public int getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public int getMaxPayloadBytes() {
            return maxPayloadBytes;
        }

        public void setMaxPayloadBytes(int maxPayloadBytes) {
            this.maxPayloadBytes = maxPayloadBytes;
        }
    }

    /** The {@code txbox.outbox.*} properties. */
    public static class OutboxProperties {
        /**
         * Largest message send accepts, in bytes as Kafka counts its record (payload, routing key,
         * published headers and record overhead); the default fits Kafka's defaults. At least 1.
         */
        private int maxRecordBytes = Outbox.DEFAULT_MAX_RECORD_BYTES;

        /**
         * Whether a send wakes listening relays (a relay process, or one in another service) at once
         * on PostgreSQL, with a NOTIFY at most every 10 ms per outbox; no effect on MariaDB and MySQL.
         */
        private boolean notifyRelays = true;

        public int getMaxRecordBytes() {
            return maxRecordBytes;
        }

        public void setMaxRecordBytes(int maxRecordBytes) {
            this.maxRecordBytes = maxRecordBytes;
        }

        public boolean isNotifyRelays() {
            return notifyRelays;
        }

        public void setNotifyRelays(boolean notifyRelays) {
            this.notifyRelays = notifyRelays;
        }
    }

    /**
     * The {@code txbox.relay.*} properties: the embedded relay, off unless {@code
     * txbox.relay.enabled=true}. Every default equals the relay's public constant ({@link Relay}).
     */
    public static class RelayProperties {
        /** Default {@code txbox.relay.health-timeout}: 2 s. */
        public static final Duration DEFAULT_HEALTH_TIMEOUT = Duration.ofSeconds(2);

        /**
         * Whether to run a relay inside the application, started and stopped with the
         * application context.
         */
        private boolean enabled;

        /**
         * Outbox destination to broker target: "kafka:<topic>" or "rabbitmq:<exchange>". At least
         * one when the relay is enabled. Rows of a destination without a route are dead-lettered.
         */
        private Map<String, String> routes = new LinkedHashMap<>();

        /**
         * Id of this relay in logs and lane ownership; unique among running relays. Defaults to
         * relay-<pid>-<random>.
         */
        private @Nullable String id;

        /** Worker threads, each with its own lanes and database connection; 1 to 64. */
        private int workers = Relay.DEFAULT_WORKERS;

        /** Rows claimed per batch; 1 to 10000. */
        private int batchSize = Relay.DEFAULT_BATCH_SIZE;

        /** How long an idle worker waits before looking again (sends in this application wake it at once). */
        private Duration pollInterval = Relay.DEFAULT_POLL_INTERVAL;

        /**
         * On PostgreSQL, listen (one connection of its own) for the wake-ups of outboxes in other
         * processes, so their sends are published at once.
         */
        private boolean listen = Relay.DEFAULT_LISTEN;

        /** Longest wait for the broker to confirm a batch; shorter than the lane lease. */
        private Duration publishTimeout = Relay.DEFAULT_PUBLISH_TIMEOUT;

        /** How long a worker's lanes stay its own without renewal; a crashed relay's lanes are taken over after this. */
        private Duration laneLease = Relay.DEFAULT_LANE_LEASE;

        /** Publish attempts before a row is dead-lettered; at least 1. */
        private int maxAttempts = Relay.DEFAULT_MAX_ATTEMPTS;

        /** Retry delay after the first failure, doubled per attempt up to max-backoff, with jitter. */
        private Duration initialBackoff = Relay.DEFAULT_INITIAL_BACKOFF;

        /** Longest retry delay. */
        private Duration maxBackoff = Relay.DEFAULT_MAX_BACKOFF;

        /** How often the backlog (rows, oldest age) is sampled for meters and health; 0 turns it off. */
        private Duration backlogInterval = Relay.DEFAULT_BACKLOG_INTERVAL;

        /**
         * Destinations whose dead-lettered rows do not park their routing key (comma-separated, * for
         * all); by default a dead-lettered row parks its key until an operator retries or skips it.
         */
        private String moveOnDestinations = "";

        /**
         * Bound on the relay's stop when the application context closes: the in-flight batch
         * finishes or is rolled back, and the lanes are released.
         */
        private Duration shutdownTimeout = Relay.DEFAULT_SHUTDOWN_TIMEOUT;

        /** Timeout of each check of the relay health indicator (database and each broker). */
        private Duration healthTimeout = DEFAULT_HEALTH_TIMEOUT;

        private final KafkaProperties kafka = new KafkaProperties();

        private final RabbitProperties rabbitmq = new RabbitProperties();

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Map<String, String> getRoutes() {
            return routes;
        }

        public void setRoutes(Map<String, String> routes) {
            this.routes = routes;
        }

        public @Nullable String getId() {
            return id;
        }

        public void setId(@Nullable String id) {
            this.id = id;
        }

        public int getWorkers() {
            return workers;
        }

        public void setWorkers(int workers) {
            this.workers = workers;
        }

        public int getBatchSize() {
            return batchSize;
        }

        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public boolean isListen() {
            return listen;
        }

        public void setListen(boolean listen) {
            this.listen = listen;
        }

        public Duration getPublishTimeout() {
            return publishTimeout;
        }

        public void setPublishTimeout(Duration publishTimeout) {
            this.publishTimeout = publishTimeout;
        }

        public Duration getLaneLease() {
            return laneLease;
        }

        public void setLaneLease(Duration laneLease) {
            this.laneLease = laneLease;
        }

        public int getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public Duration getInitialBackoff() {
            return initialBackoff;
        }

        public void setInitialBackoff(Duration initialBackoff) {
            this.initialBackoff = initialBackoff;
        }

        public Duration getMaxBackoff() {
            return maxBackoff;
        }

        public void setMaxBackoff(Duration maxBackoff) {
            this.maxBackoff = maxBackoff;
        }

        public Duration getBacklogInterval() {
            return backlogInterval;
        }

        public void setBacklogInterval(Duration backlogInterval) {
            this.backlogInterval = backlogInterval;
        }

        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        public String getMoveOnDestinations() {
            return moveOnDestinations;
        }

        public void setMoveOnDestinations(String moveOnDestinations) {
            this.moveOnDestinations = moveOnDestinations;
        }

        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }

        public Duration getHealthTimeout() {
            return healthTimeout;
        }

        public void setHealthTimeout(Duration healthTimeout) {
            this.healthTimeout = healthTimeout;
        }

        public KafkaProperties getKafka() {
            return kafka;
        }

        public RabbitProperties getRabbitmq() {
            return rabbitmq;
        }
    }

    /** The {@code txbox.relay.kafka.*} properties. */
    public static class KafkaProperties {
        /**
         * Kafka bootstrap.servers for the relay. Defaults to the connection settings of Spring
         * Kafka's ProducerFactory (spring.kafka.*: bootstrap servers, security, SSL, SASL).
         */
        private @Nullable String bootstrapServers;

        /**
         * Further producer properties, overriding txbox's defaults; acks, enable.idempotence,
         * serializers and transactional.id are the relay's and refused.
         */
        private Map<String, String> properties = new LinkedHashMap<>();

        public @Nullable String getBootstrapServers() {
            return bootstrapServers;
        }

        public void setBootstrapServers(@Nullable String bootstrapServers) {
            this.bootstrapServers = bootstrapServers;
        }

        public Map<String, String> getProperties() {
            return properties;
        }

        public void setProperties(Map<String, String> properties) {
            this.properties = properties;
        }
    }

    /** The {@code txbox.relay.rabbitmq.*} properties. */
    public static class RabbitProperties {
        /**
         * RabbitMQ URI for the relay, amqp://user:password@host:5672/vhost (the default virtual
         * host / is %2f). Defaults to the connection settings of Spring AMQP's connection factory
         * (spring.rabbitmq.*: host, port, credentials, virtual host, SSL).
         */
        private @Nullable String uri;

        public @Nullable String getUri() {
            return uri;
        }

        public void setUri(@Nullable String uri) {
            this.uri = uri;
        }
    }
}
