package io.txbox.inbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.ConsumerBuilder;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** Options are checked when set, and the messages name the option and the bad value. */
class KafkaInboxConsumerBuilderTest {
    // Never connected to: building creates no connection.
    private static final DataSource NO_DATABASE = new org.postgresql.ds.PGSimpleDataSource();
    private final Inbox inbox = Inbox.builder("payments").build();

    private KafkaInboxConsumer.Builder builder() {
        return KafkaInboxConsumer.builder(inbox, NO_DATABASE, (tx, m) -> null);
    }

    @Test
    void consumerProperty_autoCommitTrue_refused() {
        assertThatThrownBy(() -> builder().consumerProperty("enable.auto.commit", "true"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("enable.auto.commit").hasMessageContaining("\"true\"");
    }

    @Test
    void consumerProperty_deserializer_refused() {
        assertThatThrownBy(() -> builder().consumerProperty("value.deserializer", "x.Y"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("value.deserializer").hasMessageContaining("x.Y");
    }

    @Test
    void consumerProperty_autoCommitFalse_accepted() {
        KafkaInboxConsumer.Builder builder = builder().bootstrapServers("localhost:9092").topics("t");

        assertThat(builder.consumerProperty("enable.auto.commit", false)).isSameAs(builder);
        assertThat(builder.consumerProperty("enable.auto.commit", "false")).isSameAs(builder);
        KafkaInboxConsumer consumer = builder.build();
        assertThat(consumer.isRunning()).isFalse();
        consumer.close();
    }

    @Test
    void topics_empty_refused() {
        assertThatThrownBy(() -> builder().topics()).isInstanceOf(ConfigException.class).hasMessageContaining("topics");
    }

    @Test
    void pollTimeout_zero_refusedNamingValue() {
        assertThatThrownBy(() -> builder().pollTimeout(Duration.ZERO))
                .isInstanceOf(ConfigException.class).hasMessageContaining("pollTimeout").hasMessageContaining("PT0S");
    }

    @Test
    void keyHeader_blank_refused() {
        assertThatThrownBy(() -> builder().keyHeader(" "))
                .isInstanceOf(ConfigException.class).hasMessageContaining("keyHeader").hasMessageContaining("\" \"");
    }

    @Test
    void shutdownTimeout_negative_refused() {
        assertThatThrownBy(() -> builder().shutdownTimeout(Duration.ofSeconds(-1)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("shutdownTimeout").hasMessageContaining("PT-1S");
    }

    @Test
    void build_withoutBootstrapServers_refused() {
        assertThatThrownBy(() -> builder().topics("t").build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("bootstrapServers");
    }

    @Test
    void build_withoutTopics_refused() {
        assertThatThrownBy(() -> builder().bootstrapServers("localhost:9092").build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("topics");
    }

    @Test
    void build_complete_notRunningUntilStarted() {
        KafkaInboxConsumer consumer = builder().bootstrapServers("localhost:9092").topics("t").build();
        assertThat(consumer.isRunning()).isFalse();
        assertThat(consumer.consumer()).isEqualTo("payments");
        consumer.close(); // closing an unstarted consumer is allowed
        assertThat(ConsumerBuilder.DEFAULT_KEY_HEADER).isEqualTo("idempotency-key");
    }

    @Test
    void batchSize_negative_refusedNamingValue() {
        assertThatThrownBy(() -> builder().batchSize(-3))
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize").hasMessageContaining("-3");
    }

    @Test
    void build_batchSizeAboveMaxPollRecords_refusedSayingWhatToRaise() {
        assertThatThrownBy(() -> builder().bootstrapServers("localhost:9092").topics("t").batchSize(500).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize 500 exceeds max.poll.records 100")
                .hasMessageContaining("max.poll.records to at least 500");
    }

    @Test
    void build_batchSizeWithinRaisedMaxPollRecords_accepted() {
        assertThat(builder().bootstrapServers("localhost:9092").topics("t").batchSize(500)
                .consumerProperty("max.poll.records", "500").build().isRunning()).isFalse();
    }

    @Test
    void build_twoPhaseStoreWithBatchSize_refusedNamingValue() {
        assertThatThrownBy(() -> KafkaInboxConsumer.builder(inbox.twoPhase(NO_DATABASE), m -> null)
                        .bootstrapServers("localhost:9092").topics("t").batchSize(10).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize must be 1")
                .hasMessageContaining("TwoPhaseStore").hasMessageContaining("10");
    }

    @Test
    void parkKeys_onAStoreThatKeepsNoParkedKeys_refusedNamingTheStore() {
        io.txbox.inbox.TwoPhaseStore elsewhere = new NoParkedKeysStore();
        KafkaInboxConsumer.Builder b = KafkaInboxConsumer.builder(elsewhere, m -> null)
                .bootstrapServers("localhost:9092").topics("t").parkKeys(true);

        assertThatThrownBy(b::build).isInstanceOf(ConfigException.class).hasMessageContaining("parkKeys(true)")
                .hasMessageContaining("NoParkedKeysStore").hasMessageContaining("Inbox.twoPhase");
    }

    @Test
    void parkKeys_onTheDatabaseStore_accepted() {
        KafkaInboxConsumer consumer = KafkaInboxConsumer.builder(inbox.twoPhase(NO_DATABASE), m -> null)
                .bootstrapServers("localhost:9092").topics("t").parkKeys(true).build();

        assertThat(consumer.parkedKeys().consumer()).isEqualTo("payments");
        consumer.close();
    }

    @Test
    void parkedKeys_whenNotParking_refusedSayingHowToTurnItOn() {
        KafkaInboxConsumer consumer = builder().bootstrapServers("localhost:9092").topics("t").build();

        assertThatThrownBy(consumer::parkedKeys).isInstanceOf(ConfigException.class)
                .hasMessageContaining("does not park keys").hasMessageContaining("parkKeys(true)");
        consumer.close();
    }

    @Test
    void parkedPollInterval_outOfRange_refusedNamingValue() {
        assertThatThrownBy(() -> builder().parkedPollInterval(Duration.ofMillis(10)))
                .isInstanceOf(ConfigException.class).hasMessageContaining("parkedPollInterval").hasMessageContaining("PT0.01S");
    }

    /** A two-phase store kept somewhere other than the database inbox (as Redis or DynamoDB): no parked keys. */
    private static final class NoParkedKeysStore implements io.txbox.inbox.TwoPhaseStore {
        @Override
        public String consumer() {
            return "payments";
        }

        @Override
        public io.txbox.inbox.Fingerprint fingerprint() {
            return io.txbox.inbox.Fingerprint.sha256();
        }

        @Override
        public io.txbox.inbox.Claim claim(io.txbox.inbox.InboundMessage message) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void complete(io.txbox.inbox.Claim claim, byte[] result) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void complete(io.txbox.inbox.Claim claim, int resultStatus, java.util.Map<String, java.util.List<String>> h,
                byte[] body) {
            throw new UnsupportedOperationException();
        }

        @Override
        public io.txbox.inbox.Outcome fail(io.txbox.inbox.Claim claim, Throwable error) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void release(io.txbox.inbox.Claim claim) {
            throw new UnsupportedOperationException();
        }
    }
}
