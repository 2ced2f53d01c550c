package io.txbox.dynamodb;

import io.txbox.ConfigException;
import io.txbox.internal.Args;
import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.DeadEntry;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.internal.StoreOptions;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * Two-phase claims kept in a DynamoDB table, for services whose data lives in DynamoDB. The
 * same protocol as the database inbox's two-phase mode: {@link #claim}, do the work, then
 * {@link #complete}, {@link #fail} or {@link #release} with the claim's fencing token. Every
 * write is a conditional write; a claim of a key already stored is a failed conditional put
 * followed by a strongly consistent read and, to take the key over, one more conditional update.
 *
 * <p>What it guarantees: one live lease per key (concurrent claims of a key: exactly one is
 * ACQUIRED); a fence made of the entry's token, which grows with every acquisition of the key,
 * and the lease end, so a worker whose lease was taken over cannot complete, fail or release,
 * even after the entry expired and was made again; a key seen again with another payload
 * fingerprint is refused with {@link KeyReuseException}; DEAD after {@code maxAttempts} failed
 * or crashed attempts (a {@link #release} does not count). DynamoDB acknowledges a write once it
 * is durable in the region, so unlike Redis a crash of the server loses nothing acknowledged.
 *
 * <p><b>Time.</b> DynamoDB has no server clock a condition can read, so leases and expiry are
 * measured by the {@linkplain Builder#clock clock} of the JVM that writes them. A claimant
 * treats a lease as run out only {@link Builder#clockSkewMargin} after its end: as long as no
 * two consumers' clocks are further apart than that margin, no lease is taken over early. With
 * more skew, a worker whose clock runs ahead may take over a lease that is still live, and the
 * effect may run twice; the fence still refuses the first worker's complete, so the stored
 * outcome is the second one's. Keep the clocks synchronised (NTP) and the margin above their
 * worst skew.
 *
 * <p><b>Retention.</b> Completed, failed and released entries carry an expiry time (attribute
 * {@value #TTL_ATTRIBUTE}, epoch seconds) of {@code retention} after their last change; with
 * DynamoDB's TTL enabled on that attribute (see {@link #createTable}), DynamoDB deletes them,
 * usually within a few days of that time, so a redelivery is recognised for at least
 * {@code retention}. DEAD entries have no expiry: they stay until an operator
 * {@linkplain #listDead lists} and {@linkplain #resetDead resets} them.
 *
 * <p>It is a {@link TwoPhaseStore}, so it plugs into what takes one: the HTTP helper
 * ({@code HttpIdempotency.builder(store)}) and the consumer runners.
 *
 * <p>Thread-safe. It uses the client it is given and does not close it.
 */
public interface DynamoStore extends TwoPhaseStore {
    /** Default {@link Builder#table}: {@value}. */
    String DEFAULT_TABLE = "txbox_inbox";
    /** Default {@link Builder#maxAttempts}: {@value}. */
    int DEFAULT_MAX_ATTEMPTS = StoreOptions.DEFAULT_MAX_ATTEMPTS;
    /** Default {@link Builder#lease}: 30 seconds. */
    Duration DEFAULT_LEASE = StoreOptions.DEFAULT_LEASE;
    /** Default {@link Builder#clockSkewMargin}: 2 seconds. */
    Duration DEFAULT_CLOCK_SKEW_MARGIN = Duration.ofSeconds(2);
    /** Default {@link Builder#retention}: 1 day. */
    Duration DEFAULT_RETENTION = StoreOptions.DEFAULT_RETENTION;
    /** Default {@link Builder#maxResultBytes}: {@value} (256 KiB). */
    int DEFAULT_MAX_RESULT_BYTES = StoreOptions.DEFAULT_MAX_RESULT_BYTES;
    /** Largest {@link Builder#maxResultBytes}: {@value} (350 KiB), leaving room for the rest of the item. */
    int MAX_RESULT_BYTES = 350 * 1024;
    /** DynamoDB's largest item, in bytes ({@value}); an entry that would be larger is refused before any write. */
    int MAX_ITEM_BYTES = 400 * 1024;
    /** Default {@link Builder#throttleRetries}: {@value}. */
    int DEFAULT_THROTTLE_RETRIES = 5;
    /** The table's partition key, a string: {@value}. There is no sort key. */
    String KEY_ATTRIBUTE = "pk";
    /** The attribute DynamoDB's TTL must be enabled on: {@value}. */
    String TTL_ATTRIBUTE = "expires_at";
    /**
     * Most business writes a {@link DynamoHandler} may add: {@value}, DynamoDB's 100 items per
     * transaction less the message's entry.
     */
    int MAX_TRANSACTION_WRITES = 99;

    /**
     * A builder for the store of {@code consumer}: 1 to 128 characters from
     * {@code A-Z a-z 0-9 . _ : / -}, as for the database inbox.
     */
    static Builder builder(String consumer) {
        return new Builder(consumer);
    }

    /**
     * Creates {@code table} with the key schema the store needs (partition key
     * {@value #KEY_ATTRIBUTE}, a string; no sort key; on-demand billing), waits until it is
     * active, then enables TTL on {@value #TTL_ATTRIBUTE}. A table that exists already is left as
     * it is (its TTL setting too). A server that does not implement {@code UpdateTimeToLive} (an
     * emulator) gets a warning in the log instead, and no entry ever expires there.
     *
     * @throws ConfigException if {@code table} is not a valid DynamoDB table name
     * @throws TxboxException if DynamoDB refused or could not be reached
     */
    static void createTable(DynamoDbClient client, String table) {
        Tables.create(client, table);
    }

    /**
     * Claims {@code message}: a new key, a FAILED or released one, or one whose lease ran out
     * (by the clock, plus the skew margin) is ACQUIRED with a lease of {@code lease} and a new
     * fencing token. While a lease holds, other claims get IN_FLIGHT; a completed key gives
     * DUPLICATE with the stored result; a key whose attempts are used up gives DEAD. An expired
     * lease at {@code maxAttempts} makes the key DEAD (a message that keeps crashing its worker).
     *
     * <p>{@link Claim#fencingToken()}: for ACQUIRED, the token that fences this claim (grows
     * with every acquisition of the key); otherwise the key's attempts so far. Costs one write
     * for a new key; one failed write and one read for a stored one, plus one write to take it
     * over.
     *
     * @throws InvalidInputException if the key or tenant breaks the inbox's key rules; nothing is written
     * @throws KeyReuseException if the key was claimed with a different payload fingerprint
     * @throws RetryableException if DynamoDB could not be reached, timed out or kept throttling;
     *     the claim may or may not be stored (a stored one runs out with its lease)
     */
    @Override
    Claim claim(InboundMessage message);

    /**
     * Completes an acquired claim and stores {@code result} for later duplicates.
     *
     * @throws InvalidInputException if {@code result} is larger than {@code maxResultBytes}, or
     *     the entry would pass DynamoDB's item size limit; nothing is written
     * @throws LeaseLostException if the claim was taken over or has expired; nothing is written
     * @throws RetryableException if DynamoDB could not be reached; call again with the same claim
     */
    @Override
    void complete(Claim claim, byte @Nullable [] result);

    /**
     * Completes an acquired claim with a response to replay: status, headers (in order; a name
     * may repeat) and body. The body counts against {@code maxResultBytes}; body and headers
     * together against DynamoDB's item size limit.
     *
     * @throws InvalidInputException if the response is too large; nothing is written
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    @Override
    void complete(Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body);

    /**
     * Fails an acquired claim: records {@code error}; the key becomes FAILED (the next claim
     * runs it again) or DEAD once it has had {@code maxAttempts} attempts. Costs one write, or
     * two for the failure that makes the key DEAD.
     *
     * @return FAILED or DEAD, with the attempts so far
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    @Override
    Outcome fail(Claim claim, Throwable error);

    /**
     * Gives an acquired claim back without counting an attempt, so the next claim runs again at
     * once. The fencing token is never reused.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    @Override
    void release(Claim claim);

    /**
     * Atomic mode, the DynamoDB counterpart of the database inbox's {@code process}: the
     * message's entry and the handler's own writes go to DynamoDB in one
     * {@code TransactWriteItems}, so the business writes and the record that the message was
     * handled commit together or not at all.
     *
     * <p>It claims the key as {@link #claim} does. A first delivery (ACQUIRED) runs
     * {@code handler}, which adds its writes to a list instead of writing; the store then sends
     * one transaction: the entry completed with the handler's result, conditioned on the claim's
     * fence, plus those writes. A crash before the transaction leaves nothing but the lease,
     * which runs out, and the next delivery runs the handler again.
     *
     * <p>Outcomes: PROCESSED once the transaction committed; DUPLICATE (the stored result),
     * DEAD, IN_FLIGHT or KEY_REUSED without running the handler, as for {@link #claim}. FAILED
     * (or DEAD at {@code maxAttempts}) when the handler threw, or when DynamoDB cancelled the
     * transaction because a condition of one of the handler's writes failed or a write was
     * invalid; then nothing of the transaction was written, the attempt is counted, and
     * {@link Outcome#error()} is what the handler threw or the SDK's
     * {@code TransactionCanceledException}, whose cancellation reasons name each write's fate.
     *
     * <p>DynamoDB's limits on a transaction apply: at most 100 items (the entry and
     * {@value #MAX_TRANSACTION_WRITES} writes) and 4 MB in all, every table in the store's
     * region (a global table replicates a transaction to other regions without its isolation),
     * and no two writes to the same item. A transaction that conflicts with another write or
     * transaction on one of its items is cancelled with {@code TransactionConflict}; the claim is
     * then given back without counting an attempt and a {@link RetryableException} says to
     * deliver again. Costs a claim (see {@link #claim}) plus one transaction, which DynamoDB
     * bills as two writes per item.
     *
     * @throws InvalidInputException if the key breaks the key rules, the handler added more than
     *     {@value #MAX_TRANSACTION_WRITES} writes, a null, or one to the store's own entry, or its
     *     result is too large (see {@link #complete}); nothing is written and no attempt is counted
     * @throws LeaseLostException if the claim was taken over while the handler ran (its lease
     *     ran out); nothing of the transaction was written
     * @throws RetryableException if DynamoDB could not be reached or kept throttling, or the
     *     transaction met a conflict; it may or may not have committed: deliver the message
     *     again, and a committed one is then a DUPLICATE
     */
    Outcome process(InboundMessage message, DynamoHandler handler);

    /**
     * Makes a DEAD key claimable again with a fresh count of attempts, and gives it the
     * retention expiry back. The operator's answer to an entry {@link #listDead} showed, once
     * its cause is fixed.
     *
     * @return {@code false} if the key was not DEAD
     */
    boolean resetDead(String key, @Nullable String tenant);

    /**
     * Up to {@code limit} DEAD entries of this consumer, for an operator to inspect, then
     * {@link #resetDead} or leave. DEAD entries never expire, so they are found here until then.
     * {@link DeadEntry#receivedAt()} is the first claim's time by the claimant's clock.
     *
     * <p>Cost: a {@code Scan} of the whole table (DynamoDB filters after reading), paged until
     * {@code limit} entries are found or the table ends. Run it from a maintenance job, not on
     * the hot path.
     *
     * @param limit 1 to 10,000
     */
    List<DeadEntry> listDead(int limit);

    /**
     * Builds a {@link DynamoStore}. Each option is checked as it is set; the messages name the
     * option and the bad value.
     */
    final class Builder {
        final StoreOptions options;
        @Nullable DynamoDbClient client;
        String table = DEFAULT_TABLE;
        Duration clockSkewMargin = DEFAULT_CLOCK_SKEW_MARGIN;
        int throttleRetries = DEFAULT_THROTTLE_RETRIES;
        Clock clock = Clock.systemUTC();

        private Builder(String consumer) {
            this.options = new StoreOptions(consumer, MAX_RESULT_BYTES);
        }

        /**
         * The DynamoDB client; required. The store does not close it. Its own timeouts and
         * retries apply to every call (set {@code apiCallTimeout} so that a call cannot hang).
         */
        public Builder client(DynamoDbClient client) {
            this.client = Args.configured(client, "client");
            return this;
        }

        /** The table; default {@value DynamoStore#DEFAULT_TABLE}. 3 to 255 characters from {@code A-Z a-z 0-9 _ . -}. */
        public Builder table(String table) {
            this.table = Tables.checkName(table);
            return this;
        }

        /** Attempts after which a key is DEAD; default {@value DynamoStore#DEFAULT_MAX_ATTEMPTS}. At least 1. */
        public Builder maxAttempts(int maxAttempts) {
            options.maxAttempts(maxAttempts);
            return this;
        }

        /**
         * How often a call throttled by DynamoDB ({@code ProvisionedThroughputExceededException},
         * {@code RequestLimitExceeded}, {@code ThrottlingException}) is sent again, with
         * exponential backoff and jitter from 50 ms up to 2 s, after the client's own retries gave
         * up; default {@value DynamoStore#DEFAULT_THROTTLE_RETRIES}. 0 to 20. Then the call throws
         * {@link RetryableException}.
         */
        public Builder throttleRetries(int throttleRetries) {
            this.throttleRetries = Args.between(throttleRetries, 0, 20, "throttleRetries");
            return this;
        }

        /** Lease length, measured by the {@link #clock}; default 30 s. Between 1 ms and 1 day. */
        public Builder lease(Duration lease) {
            options.lease(lease);
            return this;
        }

        /**
         * How far apart the consumers' clocks may be: a lease is taken over only this long after
         * its end; default 2 s. Between 0 and 10 minutes. See the interface's "Time" section.
         */
        public Builder clockSkewMargin(Duration clockSkewMargin) {
            this.clockSkewMargin = Args.between(clockSkewMargin, Duration.ZERO,
                    Duration.ofMinutes(10), "clockSkewMargin");
            return this;
        }

        /**
         * How long an entry is kept after its last change (its {@value DynamoStore#TTL_ATTRIBUTE}),
         * and so how long a redelivery is recognised at least; default 1 day. Between 1 second and
         * 365 days. DEAD entries do not expire.
         */
        public Builder retention(Duration retention) {
            options.retention(retention);
            return this;
        }

        /** How payloads are fingerprinted; default {@link Fingerprint#sha256()}. */
        public Builder fingerprint(Fingerprint fingerprint) {
            options.fingerprint(fingerprint);
            return this;
        }

        /**
         * Largest stored result (body) accepted, in bytes; default
         * {@value DynamoStore#DEFAULT_MAX_RESULT_BYTES}. Larger ones are refused with
         * {@link InvalidInputException} before anything is written. 0 to
         * {@value DynamoStore#MAX_RESULT_BYTES}: an item holds at most 400 KB.
         */
        public Builder maxResultBytes(int maxResultBytes) {
            options.maxResultBytes(maxResultBytes);
            return this;
        }

        /** The clock leases and expiry are measured by; default {@link Clock#systemUTC()}. */
        public Builder clock(Clock clock) {
            this.clock = Args.configured(clock, "clock");
            return this;
        }

        /**
         * A thread-safe store. Checks the table now with {@code DescribeTable}: it must exist
         * with partition key {@value DynamoStore#KEY_ATTRIBUTE} (a string) and no sort key. Logs a
         * warning if TTL is not enabled on {@value DynamoStore#TTL_ATTRIBUTE}.
         *
         * @throws ConfigException if no client was set, or the table is missing or has another
         *     key schema; the message names the fix
         * @throws RetryableException if DynamoDB could not be reached
         */
        public DynamoStore build() {
            if (client == null) {
                throw new ConfigException("client must be set: DynamoStore.builder(\"" + options.consumer()
                        + "\").client(dynamoDbClient)");
            }
            Tables.check(client, table);
            return new DynamoStoreImpl(this);
        }
    }
}
