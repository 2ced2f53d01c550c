package io.txbox.relay.internal;

import io.txbox.TxboxTables;
import io.txbox.internal.Backoff;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import io.txbox.relay.Route;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

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
        boolean listen,
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
        boolean closePublishers,
        Set<String> moveOnDestinations) {
    /** In {@link #moveOnDestinations}: every destination moves on. */
    public static final String ALL_DESTINATIONS = "*";

    /** The destinations of a comma-separated list, trimmed, empty names left out. */
    public static Set<String> destinations(@Nullable String list) {
        Set<String> names = new LinkedHashSet<>();
        if (list != null) {
            for (String name : list.split(",")) {
                if (!name.isBlank()) {
                    names.add(name.trim());
                }
            }
        }
        return Set.copyOf(names);
    }

    /** Whether a dead-lettered row of {@code destination} parks its routing key (the default), rather than moving on. */
    public boolean parks(String destination) {
        return !moveOnDestinations.contains(ALL_DESTINATIONS) && !moveOnDestinations.contains(destination);
    }

    /** A relay with these settings, not started yet. */
    public Relay relay() {
        return new RelayEngine(this);
    }
}
