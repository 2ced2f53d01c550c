package io.txbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.ConnectionFactory;
import io.txbox.ConfigException;
import io.txbox.inbox.Inbox;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** Options are checked when set, and the messages name the option and the bad value. */
class RabbitInboxConsumerBuilderTest {
    private static final DataSource NO_DATABASE = new org.postgresql.ds.PGSimpleDataSource();
    private final Inbox inbox = Inbox.builder("shipping").build();

    private RabbitInboxConsumer.Builder builder() {
        return RabbitInboxConsumer.builder(inbox, NO_DATABASE, (tx, m) -> null);
    }

    @Test
    void prefetch_zero_refusedNamingValue() {
        assertThatThrownBy(() -> builder().prefetch(0))
                .isInstanceOf(ConfigException.class).hasMessageContaining("prefetch").hasMessageContaining("0");
    }

    @Test
    void concurrency_tooHigh_refusedNamingValue() {
        assertThatThrownBy(() -> builder().concurrency(65))
                .isInstanceOf(ConfigException.class).hasMessageContaining("concurrency").hasMessageContaining("65");
    }

    @Test
    void connectionFactory_withoutAutomaticRecovery_refused() {
        ConnectionFactory f = new ConnectionFactory();
        f.setAutomaticRecoveryEnabled(false);
        assertThatThrownBy(() -> builder().connectionFactory(f))
                .isInstanceOf(ConfigException.class).hasMessageContaining("automaticRecoveryEnabled was false");
    }

    @Test
    void deadLetterExchange_empty_refused() {
        assertThatThrownBy(() -> builder().deadLetterExchange(""))
                .isInstanceOf(ConfigException.class).hasMessageContaining("deadLetterExchange");
    }

    @Test
    void build_withoutQueue_refused() {
        assertThatThrownBy(() -> builder().connectionFactory(new ConnectionFactory()).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("queue");
    }

    @Test
    void builder_nullHandler_refused() {
        assertThatThrownBy(() -> RabbitInboxConsumer.builder(inbox, NO_DATABASE, null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("handler");
    }

    @Test
    void batchSize_zero_refusedNamingValue() {
        assertThatThrownBy(() -> builder().batchSize(0))
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize").hasMessageContaining("0");
    }

    @Test
    void batchSize_aboveMaximum_refusedNamingValue() {
        assertThatThrownBy(() -> builder().batchSize(1001))
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize").hasMessageContaining("1001");
    }

    @Test
    void build_batchSizeAbovePrefetch_refusedSayingWhatToRaise() {
        assertThatThrownBy(() -> builder().connectionFactory(new ConnectionFactory()).queue("q").prefetch(20)
                        .batchSize(50).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("batchSize 50 exceeds prefetch 20")
                .hasMessageContaining("raise prefetch");
    }

    @Test
    void orderingKeyHeader_blank_refusedNamingValue() {
        assertThatThrownBy(() -> RabbitInboxConsumer.builder(Inbox.builder("payments").build(),
                new org.postgresql.ds.PGSimpleDataSource(), (tx, m) -> null).orderingKeyHeader(" "))
                .isInstanceOf(ConfigException.class).hasMessageContaining("orderingKeyHeader").hasMessageContaining("\" \"");
    }
}
