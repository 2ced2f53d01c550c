package io.txbox.inbox.consumer;

import io.opentelemetry.api.OpenTelemetry;
import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.internal.ConsumerOptions;
import io.txbox.inbox.consumer.internal.DeliveryProcessor;
import io.txbox.internal.Args;
import io.txbox.internal.Backoff;
import io.txbox.internal.OpenTelemetryTracing;
import io.txbox.internal.Tracing;
import io.txbox.outbox.OutboxMessage;
import java.time.Clock;
import java.time.Duration;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

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
    public static final String DEFAULT_KEY_HEADER = OutboxMessage.IDEMPOTENCY_KEY_HEADER;
    /** Default {@link #shutdownTimeout}: 30 seconds. */
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    /** Default initial {@link #backoff}: 1 second. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
    /** Default maximum {@link #backoff}: 1 minute. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(1);
    /** Default {@link #batchSize}: {@value}, one database transaction per delivery. */
    public static final int DEFAULT_BATCH_SIZE = 1;
    /** Largest {@link #batchSize}: {@value}. */
    public static final int MAX_BATCH_SIZE = 1000;
    /** Default {@link #parkedPollInterval}: 5 seconds. */
    public static final Duration DEFAULT_PARKED_POLL_INTERVAL = Duration.ofSeconds(5);

    final @Nullable Inbox inbox;
    final @Nullable DataSource dataSource;
    final @Nullable Handler handler;
    final @Nullable TwoPhaseStore store;
    final @Nullable TwoPhaseHandler twoPhaseHandler;
    String keyHeader = DEFAULT_KEY_HEADER;
    KeyPolicy keyPolicy = KeyPolicy.DEAD_LETTER;
    Backoff backoff = new Backoff(DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF);
    ConsumerListener listener = ConsumerListener.NONE;
    Clock clock = Clock.systemUTC();
    Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    int batchSize = DEFAULT_BATCH_SIZE;
    boolean hashKeysInLogs;
    Tracing tracing = Tracing.global();
    boolean parkKeys;
    Duration parkedPollInterval = DEFAULT_PARKED_POLL_INTERVAL;

    /**
     * @param inbox the inbox; its consumer name names the consumer in logs and threads
     * @param dataSource where each delivery's transaction runs
     * @param handler the business logic, run once per key
     */
    protected ConsumerBuilder(Inbox inbox, DataSource dataSource, Handler handler) {
        this.inbox = Args.configured(inbox, "inbox");
        this.dataSource = Args.configured(dataSource, "dataSource");
        this.handler = Args.configured(handler, "handler");
        this.store = null;
        this.twoPhaseHandler = null;
    }

    /**
     * For a consumer without a database transaction around the handler: each delivery is
     * claimed in {@code store}, run by {@code handler}, then completed (or failed) in the store,
     * and only then acked.
     *
     * @param store where claims are kept; its consumer name names the consumer in logs and threads
     * @param handler the work, run once per key unless a lease runs out mid-work
     */
    protected ConsumerBuilder(TwoPhaseStore store, TwoPhaseHandler handler) {
        this.inbox = null;
        this.dataSource = null;
        this.handler = null;
        this.store = Args.configured(store, "store");
        this.twoPhaseHandler = Args.configured(handler, "handler");
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
     * messages do not hit the database in step. Default 1 s doubling to 1 min, with jitter
     * ({@link #DEFAULT_INITIAL_BACKOFF}, {@link #DEFAULT_MAX_BACKOFF}).
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

    /**
     * How many deliveries at most share one database transaction; default
     * {@value #DEFAULT_BATCH_SIZE} (one transaction per delivery), 1 to {@value #MAX_BATCH_SIZE}.
     *
     * <p>Above 1 the consumer runs the deliveries it has at hand (never waiting for more) in one
     * transaction: each delivery's inbox entry and handler writes, then one commit, then the
     * acks or offset commits of the whole batch. This saves a commit (a disk flush) per
     * delivery. Because a batch is only what has already arrived, it is one delivery at low
     * rates and grows with a backlog: a consumer that falls behind shares more commits and
     * catches up, instead of queueing one transaction per delivery. Each delivery stays
     * isolated: if any delivery of the batch fails (handler exception, reused key, refused
     * input, a key in flight elsewhere) or the commit fails, the transaction is rolled back
     * and the batch runs again one transaction per delivery, so a poison delivery never takes
     * the others with it and is counted, retried and dead-lettered exactly as without batching.
     * The guarantees are those of one transaction per delivery: nothing is acked before its
     * commit, and a redelivery after a crash is a duplicate.
     *
     * <p>Only for a consumer built on an inbox and a {@code DataSource}: a two-phase consumer
     * ({@link TwoPhaseStore}) has no transaction to share and refuses a batch size above 1 when
     * built.
     *
     * <p>Cost: a handler's writes hold their row locks until the whole batch commits, and a
     * failing delivery makes its batch run twice. Kafka batches come from one partition of one
     * poll (so at most {@code max.poll.records}); RabbitMQ batches from one channel's prefetched
     * messages (so at most the prefetch, which must not be smaller).
     */
    public B batchSize(int batchSize) {
        if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
            throw new ConfigException("batchSize must be between 1 and " + MAX_BATCH_SIZE + ", but was " + batchSize);
        }
        this.batchSize = batchSize;
        return self();
    }

    /**
     * Whether idempotency keys appear in the consumer's logs (the error texts they quote
     * included), in the MDC key {@code txbox.key} and in the consumer span's {@code txbox.key}
     * attribute hashed: {@code sha256:} and the first 16 hex digits of the SHA-256 of the key's
     * UTF-8 bytes, instead of the key itself; default {@code false}. Turn it on when keys carry
     * personal data (an e-mail address, an account number): the same key always gives the same
     * hash, so a delivery's log lines can still be followed and matched against a key you hash
     * yourself. Set the inbox's own {@code Inbox.Builder.hashKeysInLogs} as well for the inbox's
     * log lines. Payloads are never logged either way.
     */
    public B hashKeysInLogs(boolean hashKeysInLogs) {
        this.hashKeysInLogs = hashKeysInLogs;
        return self();
    }

    /**
     * The OpenTelemetry instance the consumer's spans are recorded with; default the global one
     * ({@code GlobalOpenTelemetry}, as installed by the application or the Java agent) when the
     * OpenTelemetry API is on the classpath. Each handler run is a {@code CONSUMER} span named
     * {@code process <consumer>}, whose parent is the trace context of the delivery's W3C
     * {@code traceparent} / {@code tracestate} headers (as the txbox relay publishes them), and
     * which is current while the handler runs, so what the handler sends through the outbox
     * continues the same trace. Only needed when that instance is not the global one; the
     * OpenTelemetry API ({@code io.opentelemetry:opentelemetry-api}) is an optional dependency,
     * and without it handlers run without spans.
     */
    public B openTelemetry(OpenTelemetry openTelemetry) {
        this.tracing = OpenTelemetryTracing.of(openTelemetry);
        return self();
    }

    /**
     * Whether a message that goes DEAD parks its ordering key (sequenced dead letters); default
     * {@code false}. The ordering key is the Kafka record key, or the RabbitMQ routing key (or
     * the header named by the RabbitMQ builder's {@code orderingKeyHeader}).
     *
     * <p>On: a message that goes DEAD is stored in the inbox as the head of its ordering key,
     * with its payload and headers, and acked instead of dead-lettered to the broker. Every later
     * message with that ordering key is stored behind it, in arrival order, and acked (or its
     * offset committed) without running the handler: the check is one indexed read in the
     * message's own transaction (in batch and chained mode too). Other keys keep flowing, and
     * the key's order holds: nothing of it runs until an operator resolves the key with
     * {@code retryParked} or {@code skipParked} on the consumer, {@link io.txbox.inbox.ParkedKeys}
     * in Java, or {@code txbox-relay inbox parked retry|skip}, which the running consumer carries
     * out within {@link #parkedPollInterval}. Each parked message then runs exactly once through
     * this consumer's handler. Messages without an ordering key are dead-lettered as when off.
     *
     * <p>Off by default because a parked key waits for a person: turn it on where the order of a
     * key's messages matters more than their progress (a saga's "charge" before its "refund"),
     * and watch the parked-keys metrics. Off, a dead message is dead-lettered and the key's later
     * messages run.
     *
     * <p>Needs the inbox tables at migration V5. A two-phase consumer parks keys only on the
     * database inbox's store ({@code Inbox.twoPhase}); on a store that keeps no parked keys
     * (the Redis and DynamoDB stores) {@code build()} refuses with a {@link ConfigException}
     * naming the store.
     */
    public B parkKeys(boolean parkKeys) {
        this.parkKeys = parkKeys;
        return self();
    }

    /**
     * How often a consumer that parks keys looks for resolutions operators requested
     * ({@code txbox-relay inbox parked retry|skip}); default 5 s. Between 100 ms and 1 hour.
     */
    public B parkedPollInterval(Duration parkedPollInterval) {
        Args.configured(parkedPollInterval, "parkedPollInterval");
        if (parkedPollInterval.compareTo(Duration.ofMillis(100)) < 0
                || parkedPollInterval.compareTo(Duration.ofHours(1)) > 0) {
            throw new ConfigException("parkedPollInterval must be between 100 ms and 1 hour, but was "
                    + parkedPollInterval);
        }
        this.parkedPollInterval = parkedPollInterval;
        return self();
    }

    /** The batch size set so far, for broker builders that check it against their own options. */
    protected int batchSize() {
        return batchSize;
    }

    /** Sets the key policy, for brokers that support more than {@link KeyPolicy#DEAD_LETTER}. */
    protected void setKeyPolicy(KeyPolicy keyPolicy) {
        this.keyPolicy = Args.configured(keyPolicy, "keyPolicy");
    }

    /** The consumer name (the inbox's or store's), for use by subclasses before {@link #processor()}. */
    protected String consumer() {
        return inbox != null ? inbox.consumer() : java.util.Objects.requireNonNull(store).consumer();
    }

    /**
     * A processor configured with these options, for the broker adapters. Its type is in
     * {@code io.txbox.inbox.consumer.internal}: not API, it may change in any release.
     *
     * @throws ConfigException if a two-phase consumer was given a batch size above 1
     */
    protected final DeliveryProcessor processor() {
        if (store != null && batchSize > 1) {
            throw new ConfigException("batchSize must be 1 for a consumer on a TwoPhaseStore (each delivery is its "
                    + "own claim; there is no transaction to share), but was " + batchSize);
        }
        if (parkKeys && store != null && store.parkedKeys() == null) {
            throw new ConfigException("parkKeys(true) needs a store that keeps parked keys, but " + store
                    + " (" + store.getClass().getName() + ") keeps none; use the database inbox's store (Inbox.twoPhase(dataSource)) or parkKeys(false)");
        }
        return new ConsumerOptions(consumer(), inbox, dataSource, handler, store, twoPhaseHandler, keyHeader, keyPolicy,
                backoff, listener, clock, shutdownTimeout, batchSize, hashKeysInLogs, tracing, parkKeys, parkedPollInterval)
                .processor();
    }
}
