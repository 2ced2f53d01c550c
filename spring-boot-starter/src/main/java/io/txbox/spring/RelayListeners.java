package io.txbox.spring;

import io.txbox.relay.RelayListener;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded relay's one listener: keeps the latest backlog and parked-keys samples for the health indicator
 * and passes every call on to the application's {@link RelayListener} beans (the Micrometer
 * meters among them). A listener that throws is logged and skipped; the others still hear.
 */
final class RelayListeners {
    private static final Logger log = LoggerFactory.getLogger(RelayListeners.class);

    private final List<RelayListener> listeners;
    private volatile @Nullable Backlog backlog;
    private volatile @Nullable Backlog parked;

    RelayListeners(List<RelayListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    /** The latest backlog sample, or null before the first one. */
    @Nullable Backlog backlog() {
        return backlog;
    }

    /** The latest parked-keys sample (keys and the longest-parked one's age), or null before the first one. */
    @Nullable Backlog parked() {
        return parked;
    }

    /** The listener to give the relay. */
    RelayListener listener() {
        return new RelayListener() {
            @Override
            public void published(String destination, String broker, int count, Duration latency) {
                each(l -> l.published(destination, broker, count, latency));
            }

            @Override
            public void failed(String destination, String broker, int count) {
                each(l -> l.failed(destination, broker, count));
            }

            @Override
            public void deadLettered(String destination, String broker, int count) {
                each(l -> l.deadLettered(destination, broker, count));
            }

            @Override
            public void backlog(long rows, Duration oldestAge) {
                RelayListeners.this.backlog = new Backlog(rows, oldestAge);
                each(l -> l.backlog(rows, oldestAge));
            }

            @Override
            public void parkedKeys(long keys, Duration oldestAge) {
                RelayListeners.this.parked = new Backlog(keys, oldestAge);
                each(l -> l.parkedKeys(keys, oldestAge));
            }
        };
    }

    private void each(java.util.function.Consumer<RelayListener> call) {
        for (RelayListener l : listeners) {
            try {
                call.accept(l);
            } catch (RuntimeException e) {
                log.warn("relay listener {} failed; skipped: {}", l, e.toString());
            }
        }
    }

    /** A backlog sample: rows waiting and the age of the oldest (or parked keys and the longest-parked one's age). */
    record Backlog(long rows, Duration oldestAge) {}
}
