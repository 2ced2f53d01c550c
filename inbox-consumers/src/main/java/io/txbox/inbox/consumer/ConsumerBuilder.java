package io.txbox.inbox.consumer;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.internal.DeliveryProcessor;
import io.txbox.internal.Args;
import io.txbox.internal.Backoff;
import java.time.Clock;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * The options every broker consumer shares. Each option is checked as it is set; the
 * messages name the option and the bad value, and a null option is refused with a
 * {@link ConfigException} naming it. Broker builders extend this class and add their
 * own options.
 *
 * @param <B> the concrete builder, returned by every setter
 */
public abstract class ConsumerBuilder<B extends ConsumerBuilder<B>> {
    /** Default {@link #keyHeader}: {@value}, as written by the txbox relay. */
    public static final String DEFAULT_KEY_HEADER = "idempotency-key";
    /** Default {@link #shutdownTimeout}: 30 seconds. */
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    /** Default initial {@link #backoff}: 1 second. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
    /** Default maximum {@link #backoff}: 1 minute. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(1);

    final Inbox inbox;
    final DataSource dataSource;
    final Handler handler;
    String keyHeader = DEFAULT_KEY_HEADER;
    KeyPolicy keyPolicy = KeyPolicy.DEAD_LETTER;
    Backoff backoff = new Backoff(DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF);
    ConsumerListener listener = ConsumerListener.NONE;
    Clock clock = Clock.systemUTC();
    Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;

    /**
     * @param inbox the inbox; its consumer name names the consumer in logs and threads
     * @param dataSource where each delivery's transaction runs
     * @param handler the business logic, run once per key
     */
    protected ConsumerBuilder(Inbox inbox, DataSource dataSource, Handler handler) {
        this.inbox = Args.configured(inbox, "inbox");
        this.dataSource = Args.configured(dataSource, "dataSource");
        this.handler = Args.configured(handler, "handler");
    }

    /** The concrete builder. */
    protected abstract B self();

    /** The header the idempotency key is read from; default {@value #DEFAULT_KEY_HEADER}. */
    public B keyHeader(String keyHeader) {
        Args.configured(keyHeader, "keyHeader");
        if (keyHeader.isBlank() || keyHeader.length() > 255) {
            throw new ConfigException("keyHeader must be 1 to 255 characters and not blank, but was "
                    + Texts.quote(keyHeader));
        }
        this.keyHeader = keyHeader;
        return self();
    }

    /**
     * How failed deliveries are spaced out: the delay before retry {@code n} is drawn from
     * {@code [d/2, d]} where {@code d = min(max, initial * 2^(n-1))}, so retries of many failing
     * messages do not hit the database in step. Default 1 s doubling to 1 min,
     * with jitter ({@link #DEFAULT_INITIAL_BACKOFF}, {@link #DEFAULT_MAX_BACKOFF}).
     *
     * @param initial the delay before the first retry, before jitter; at least 1 ms
     * @param max the cap, before jitter; at least {@code initial}
     */
    public B backoff(Duration initial, Duration max) {
        Args.configured(initial, "initial");
        Args.configured(max, "max");
        this.backoff = new Backoff(initial, max);
        return self();
    }

    /** Hears outcomes, retries, dead letters and acks; default {@link ConsumerListener#NONE}. */
    public B listener(ConsumerListener listener) {
        this.listener = Args.configured(listener, "listener");
        return self();
    }

    /** The clock retry deadlines are measured on; default the system UTC clock. */
    public B clock(Clock clock) {
        this.clock = Args.configured(clock, "clock");
        return self();
    }

    /**
     * How long {@code close()} waits for the delivery in progress to finish and be acked;
     * default 30 s. Between 0 and 10 minutes. A delivery still running after that is left
     * unacked and redelivered later, which the inbox absorbs.
     */
    public B shutdownTimeout(Duration shutdownTimeout) {
        Args.configured(shutdownTimeout, "shutdownTimeout");
        if (shutdownTimeout.isNegative() || shutdownTimeout.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new ConfigException("shutdownTimeout must be between 0 and 10 minutes, but was " + shutdownTimeout);
        }
        this.shutdownTimeout = shutdownTimeout;
        return self();
    }

    /** Sets the key policy, for brokers that support more than {@link KeyPolicy#DEAD_LETTER}. */
    protected void setKeyPolicy(KeyPolicy keyPolicy) {
        this.keyPolicy = Args.configured(keyPolicy, "keyPolicy");
    }

    /** The consumer name (the inbox's), for use by subclasses before {@link #processor()}. */
    protected String consumer() {
        return inbox.consumer();
    }

    /**
     * A processor configured with these options, for the broker adapters. Its type is in
     * {@code io.txbox.inbox.consumer.internal}: not API, it may change in any release.
     */
    protected final DeliveryProcessor processor() {
        return new DeliveryProcessor(inbox, dataSource, handler, keyHeader, keyPolicy, backoff, listener, clock,
                shutdownTimeout);
    }
}
