package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.relay.RelayListener;
import io.txbox.relay.Route;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** The validated configuration of one relay, as built by {@code Relay.Builder}. */
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
        Duration initialBackoff,
        Duration maxBackoff,
        Duration backlogInterval,
        Duration shutdownTimeout,
        List<Outbox> wakeOn,
        RelayListener listener,
        Clock clock,
        boolean closePublishers) {}
