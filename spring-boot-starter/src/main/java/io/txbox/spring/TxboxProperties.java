package io.txbox.spring;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

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

        public int getMaxRecordBytes() {
            return maxRecordBytes;
        }

        public void setMaxRecordBytes(int maxRecordBytes) {
            this.maxRecordBytes = maxRecordBytes;
        }
    }
}
