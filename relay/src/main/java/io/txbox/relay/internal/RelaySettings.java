package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import io.txbox.internal.Backoff;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import io.txbox.relay.Route;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;
import javax.sql.DataSource;

/**
 * The validated configuration of one relay, as built by {@code Relay.Builder}, and the hand-off to
 * the implementation behind {@link Relay}: {@link #relay()}. The one public type of this package
 * besides {@link SchemaCheck}; not API.
 */
public record RelaySettings(
        String relayId,
        DataSource dataSource,
        TxboxTables tables,
        Map<String, Route> routes,
        int workers,
        int batchSize,
        Duration pollInterval,
        Duration publishTimeout,
        Duration laneLease,
        int maxAttempts,
        Backoff backoff,
        Duration backlogInterval,
        Duration shutdownTimeout,
        List<Outbox> wakeOn,
        RelayListener listener,
        Clock clock,
        LongSupplier ticker,
        RandomGenerator random,
        boolean closePublishers) {

    /** A relay with these settings, not started yet. */
    public Relay relay() {
        return new RelayEngine(this);
    }
}
