package io.txbox.relay.standalone;

import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A publisher whose broker connection may not exist yet. The process starts even when a broker
 * is down: until {@code connect} succeeds, every publish fails as retryable (the relay backs
 * off and keeps the rows) and {@link #check} fails, so {@code /health/ready} reports 503 naming
 * the broker. A new connection is tried at most once per {@code retryEvery}, from a publish or
 * a health check; once made, it is the wrapped publisher's own recovery that counts.
 */
final class ConnectingPublisher implements Publisher {
    private static final Logger log = LoggerFactory.getLogger(ConnectingPublisher.class);

    private final String broker;
    private final String processId;
    private final Supplier<Publisher> connect;
    private final long retryEveryNanos;
    private final LongSupplier nanoTime;
    private volatile @Nullable Publisher delegate;
    private @Nullable String lastError;
    private long lastAttempt;
    private boolean attempted;
    private boolean closed;

    /**
     * @param broker broker name for metric tags and messages, as the connected publisher names it
     * @param processId relay id, for log lines
     * @param nanoTime {@link System#nanoTime}, or a fake in tests
     */
    ConnectingPublisher(String broker, String processId, Supplier<Publisher> connect, Duration retryEvery,
            LongSupplier nanoTime) {
        this.broker = broker;
        this.processId = processId;
        this.connect = connect;
        this.retryEveryNanos = retryEvery.toNanos();
        this.nanoTime = nanoTime;
        connected();
    }

    @Override
    public String broker() {
        return broker;
    }

    @Override
    public CompletionStage<Void> publish(String target, PublishRecord record) {
        Publisher p = connected();
        if (p == null) {
            return CompletableFuture.failedFuture(PublishException.retryable(notConnected(), null));
        }
        return p.publish(target, record);
    }

    @Override
    public void endOfBatch() {
        Publisher p = delegate;
        if (p != null) {
            p.endOfBatch();
        }
    }

    @Override
    public void check(Duration timeout) {
        Publisher p = connected();
        if (p == null) {
            throw PublishException.retryable(notConnected(), null);
        }
        p.check(timeout);
    }

    @Override
    public void checkTarget(String target, Duration timeout) {
        Publisher p = connected();
        if (p == null) {
            throw PublishException.retryable(notConnected(), null);
        }
        p.checkTarget(target, timeout);
    }

    @Override
    public synchronized void close() {
        closed = true;
        Publisher p = delegate;
        if (p != null) {
            p.close();
        }
    }

    private synchronized String notConnected() {
        return broker + " not connected: " + lastError;
    }

    private @Nullable Publisher connected() {
        Publisher p = delegate;
        if (p != null) {
            return p;
        }
        synchronized (this) {
            if (delegate != null || closed) {
                return delegate;
            }
            long now = nanoTime.getAsLong();
            if (attempted && now - lastAttempt < retryEveryNanos) {
                return null;
            }
            boolean first = !attempted;
            attempted = true;
            lastAttempt = now;
            try {
                delegate = connect.get();
                if (!first) {
                    log.info("{} - connected to {}", processId, broker);
                }
                return delegate;
            } catch (RuntimeException e) {
                lastError = Redaction.scrub(e.getMessage() != null ? e.getMessage() : e.toString());
                if (first) {
                    log.warn("{} - {} unreachable, starting anyway and retrying every {}: {}", processId, broker,
                            Durations.format(Duration.ofNanos(retryEveryNanos)), lastError);
                }
                return null;
            }
        }
    }
}
