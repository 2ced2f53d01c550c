package io.txbox.inbox.consumer.internal;

import io.txbox.InvalidInputException;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.Resolution;
import io.txbox.internal.KeyLogs;
import io.txbox.internal.KeyRules;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer's sequenced dead letters ({@code parkKeys(true)}): the ordering key of a delivery,
 * the handler wrapper that parks a message of a parked key in the receiving transaction instead
 * of running it, the parking of a message that went DEAD, and the thread that carries out the
 * resolutions operators request. The storage and the resolutions are the inbox's
 * {@link ParkedKeys}.
 */
final class Parking {
    private static final Logger log = LoggerFactory.getLogger(Parking.class);
    /** Requests carried out per look: {@value}. */
    private static final int REQUESTS_PER_LOOK = 100;

    private final String consumer;
    private final ParkedKeys keys;
    private final KeyLogs keyLogs;
    private final Duration pollInterval;
    // How a parked message runs: through the handler in atomic mode, or the runner (two-phase).
    private final @Nullable Handler handler;
    private final ParkedKeys.@Nullable Runner runner;
    private @Nullable ScheduledExecutorService poller;

    Parking(String consumer, ParkedKeys keys, KeyLogs keyLogs, Duration pollInterval, @Nullable Handler handler,
            ParkedKeys.@Nullable Runner runner) {
        this.consumer = consumer;
        this.keys = keys;
        this.keyLogs = keyLogs;
        this.pollInterval = pollInterval;
        this.handler = handler;
        this.runner = runner;
    }

    /** Retries or ({@code skipHead}) skips the key's dead message, then runs the rest, as the consumer runs a delivery. */
    Resolution resolve(String orderingKey, boolean skipHead) {
        if (runner != null) {
            return keys.resolve(orderingKey, skipHead, runner);
        }
        Handler h = java.util.Objects.requireNonNull(handler);
        return skipHead ? keys.skip(orderingKey, h) : keys.retry(orderingKey, h);
    }

    private List<Resolution> resolveRequested(int limit) {
        return runner != null ? keys.resolveRequested(limit, runner)
                : keys.resolveRequested(limit, java.util.Objects.requireNonNull(handler));
    }

    ParkedKeys keys() {
        return keys;
    }

    /**
     * The ordering key of a delivery's raw key bytes: the text itself when it is a valid key,
     * else {@code sha256:} and the hex SHA-256 of the bytes (binary or overlong keys), so every
     * message with a key has one; {@code null} without key bytes.
     */
    static @Nullable String orderingKey(byte @Nullable [] raw) {
        if (raw == null) {
            return null;
        }
        try {
            return KeyRules.decode("ordering key", raw);
        } catch (InvalidInputException e) {
            try {
                return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(raw));
            } catch (NoSuchAlgorithmException impossible) {
                throw new IllegalStateException(impossible);
            }
        }
    }

    /**
     * Wraps {@code handler} for one call of the inbox: a message whose ordering key is parked is
     * parked (in the receiving transaction) and not run. {@code orderingKeys} maps each message
     * object of the call to its ordering key.
     */
    Wrapped wrap(Handler handler, Map<InboundMessage, String> orderingKeys) {
        return new Wrapped(handler, orderingKeys);
    }

    /** A handler wrapper of one call; remembers which messages its last run of each parked. */
    final class Wrapped implements Handler {
        private final Handler handler;
        private final Map<InboundMessage, String> orderingKeys;
        private final Map<InboundMessage, Boolean> parked = new IdentityHashMap<>();

        private Wrapped(Handler handler, Map<InboundMessage, String> orderingKeys) {
            this.handler = handler;
            this.orderingKeys = orderingKeys;
        }

        @Override
        public byte @Nullable [] handle(java.sql.Connection tx, InboundMessage message) throws Exception {
            String orderingKey = orderingKeys.get(message);
            boolean park = orderingKey != null && keys.parkIfParked(tx, orderingKey, message);
            synchronized (parked) {
                parked.put(message, park);
            }
            return park ? null : handler.handle(tx, message);
        }

        /** Whether the last run for {@code message} parked it. */
        boolean parked(InboundMessage message) {
            synchronized (parked) {
                return Boolean.TRUE.equals(parked.get(message));
            }
        }
    }

    /** One message and its ordering key, as the wrapper looks it up. */
    static Map<InboundMessage, String> one(InboundMessage message, @Nullable String orderingKey) {
        Map<InboundMessage, String> m = new IdentityHashMap<>();
        if (orderingKey != null) {
            m.put(message, orderingKey);
        }
        return m;
    }

    /** Parks the key of a message that went DEAD, with it as the head. */
    void parkDead(String orderingKey, InboundMessage message, String reason) {
        keys.parkDead(orderingKey, message, reason);
    }

    /**
     * Starts looking for requested resolutions every poll interval, each carried out as
     * {@link #resolve} does, and tells {@code listener} the parked keys' stats after each look.
     */
    synchronized void start(io.txbox.inbox.consumer.ConsumerListener listener) {
        if (poller != null) {
            return;
        }
        ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "txbox-parked-" + consumer);
            t.setDaemon(true);
            return t;
        });
        s.scheduleWithFixedDelay(() -> {
            try {
                for (Resolution r : resolveRequested(REQUESTS_PER_LOOK)) {
                    log.info("{} - requested resolution of ordering key {}: {} run, {} skipped, {}", consumer,
                            keyLogs.show(r.orderingKey()), r.ran(), r.skipped(),
                            r.released() ? "released" : "stopped again at key " + keyLogs.show(
                                    java.util.Objects.requireNonNull(r.stoppedAt())));
                }
                listener.onParked(consumer, keys.stats());
            } catch (RuntimeException e) {
                log.warn("{} - looking for requested resolutions of parked keys failed, again in {}: {}", consumer,
                        pollInterval, e.toString());
            }
        }, pollInterval.toNanos(), pollInterval.toNanos(), TimeUnit.NANOSECONDS);
        poller = s;
    }

    synchronized void stop() {
        if (poller != null) {
            poller.shutdownNow();
            poller = null;
        }
    }
}
