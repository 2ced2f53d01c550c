package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import io.txbox.internal.Backoff;
import io.txbox.internal.Tracing;
import java.time.Clock;
import java.time.Duration;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The options of a {@code ConsumerBuilder}, already checked by it, handed across the package
 * boundary to the {@link DeliveryProcessor} they configure. Either {@code inbox}, {@code
 * dataSource} and {@code handler} are set (a database transaction per delivery), or {@code
 * store} and {@code twoPhaseHandler} (a two-phase claim per delivery).
 */
public record ConsumerOptions(
        String consumer,
        @Nullable Inbox inbox,
        @Nullable DataSource dataSource,
        @Nullable Handler handler,
        @Nullable TwoPhaseStore store,
        @Nullable TwoPhaseHandler twoPhaseHandler,
        String keyHeader,
        KeyPolicy keyPolicy,
        Backoff backoff,
        ConsumerListener listener,
        Clock clock,
        Duration shutdownTimeout,
        int batchSize,
        boolean hashKeysInLogs,
        Tracing tracing,
        boolean parkKeys,
        Duration parkedPollInterval) {

    /** The processor these options configure. */
    public DeliveryProcessor processor() {
        return new DeliveryProcessor(this);
    }
}
