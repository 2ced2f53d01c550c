package io.txbox.inbox;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.KeyRules;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The inbox of one consumer: makes each message's effects happen once, however often the
 * broker delivers it.
 *
 * <p>Entries are keyed by (consumer, tenant, key): one key seen by two consumers, or by two
 * tenants, makes two entries. Each entry stores a fingerprint of the payload, the result of
 * the first successful delivery, a count of attempts and the last error.
 *
 * <h2>Atomic mode (the default)</h2>
 * {@link #receive(Connection, InboundMessage)} records the key in the caller's transaction,
 * next to the business writes, so the entry commits or rolls back with them. A concurrent
 * duplicate waits on the primary key until the first delivery's transaction ends, then reports
 * {@link Receipt.Status#DUPLICATE}. {@link #process} does the whole transaction for the common
 * case, including retries and failure counting.
 *
 * <h2>Two-phase mode</h2>
 * For side effects outside the database: {@link #claim} commits a lease (in database time),
 * the worker does its work, then {@link #complete} or {@link #fail} with the claim's fencing
 * token. A worker whose lease expired and was taken over gets {@link LeaseLostException}.
 * {@link #twoPhase(DataSource)} offers this mode as a {@link TwoPhaseStore}, the interface a
 * Redis store implements too, for code that should run on either (the HTTP helper).
 *
 * <p>Do not mix the modes for one consumer. Implementations are immutable and thread-safe.
 * Every call that takes a {@link Connection} runs on it and never commits, rolls back or
 * closes it, and refuses a connection in auto-commit mode with {@link IllegalStateException}
 * before writing anything; every call that takes a {@link DataSource} borrows a connection for one short
 * transaction of its own. Database errors come back as {@link TxboxException}, or
 * {@link RetryableException} when retrying the transaction may succeed. A null argument
 * (where none is marked {@code @Nullable}) is refused with {@link InvalidInputException}
 * naming the parameter, before any database work.
 *
 * <p>Which databases, and how the calls behave inside a Spring transaction: see the
 * {@linkplain io.txbox.inbox package documentation}.
 */
public interface Inbox {
    /** Default {@link Builder#maxAttempts}: {@value}. */
    int DEFAULT_MAX_ATTEMPTS = 5;
    /** Default {@link Builder#maxPayloadBytes}: {@value} (1 MiB). */
    int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;
    /** Default {@link Builder#lease}: 30 seconds. */
    Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    /** Default {@link Builder#retention}: 7 days. */
    Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** Default {@link Builder#transactionRetries}: {@value}. */
    int DEFAULT_TRANSACTION_RETRIES = 3;

    /**
     * A builder for the inbox of {@code consumer}: 1 to 128 characters from
     * {@code A-Z a-z 0-9 . _ : / -}. The name is stored in every entry; changing it starts an
     * empty inbox.
     */
    static Builder builder(String consumer) {
        return new Builder(consumer);
    }

    /** The consumer name. */
    String consumer();

    /**
     * How this inbox fingerprints payloads ({@link Builder#fingerprint}), so that a layer in
     * front of it (a cache) can refuse a reused key exactly as the inbox would.
     */
    Fingerprint fingerprint();

    // ---- atomic mode ----

    /**
     * Records {@code message} in the caller's transaction {@code tx} and says whether it is new.
     * On {@link Receipt.Status#FIRST} the caller runs its business writes in the same
     * transaction and commits; the entry becomes visible to other deliveries only then. A
     * rollback removes it, so a later delivery is FIRST again.
     *
     * <p>Cost on PostgreSQL: one {@code INSERT ... ON CONFLICT} round trip for a first
     * delivery, a second (a primary-key read) for a duplicate. On MariaDB and MySQL: an
     * {@code INSERT ... ON DUPLICATE KEY UPDATE} and a locking primary-key read, plus a
     * {@code SAVEPOINT} for a first delivery (see {@link #storeResult}). A concurrent delivery of
     * the same key blocks until this transaction ends. The entry's row stays locked until
     * {@code tx} ends, so keep the transaction short.
     *
     * <p>Isolation on PostgreSQL: READ COMMITTED is the supported level. Under REPEATABLE READ or
     * SERIALIZABLE a concurrent duplicate may raise {@link RetryableException} (SQL state 40001)
     * instead: roll back and retry, and the retry reports DUPLICATE. On MariaDB and MySQL, READ
     * COMMITTED and the default REPEATABLE READ (and SERIALIZABLE) all report DUPLICATE. On any
     * database a deadlock (PostgreSQL 40P01, MariaDB/MySQL 1213) or a lock wait that timed out
     * (55P03, 1205) raises {@link RetryableException}: roll back and run the transaction again.
     *
     * @throws IllegalStateException if {@code tx} is in auto-commit mode
     * @throws InvalidInputException if the key, tenant or payload size is refused; nothing is written
     * @throws KeyReuseException if the key was seen with a different payload fingerprint
     */
    Receipt receive(Connection tx, InboundMessage message);

    /**
     * {@link #receive} for each of {@code messages} in order, in the caller's transaction
     * {@code tx}: one receipt per message, in order, each the one {@code receive} would give if
     * called for the messages one after the other with nothing in between. A message whose key
     * comes earlier in the list is therefore DUPLICATE (with no result, none being stored yet);
     * to give it the first one's result, receive it after that one's {@link #storeResult}.
     *
     * <p>Cost on PostgreSQL: one {@code INSERT ... SELECT FROM unnest(...) ON CONFLICT} round
     * trip for the whole list, plus {@code receive}'s cost for each message that is not FIRST or
     * repeats an earlier key. Elsewhere (and in this default) it calls {@code receive} per
     * message. The entries' rows stay locked until {@code tx} ends. On MariaDB and MySQL a
     * {@link #storeResult} releases the savepoints of the FIRST receipts that came after its
     * message, which then refuse theirs: store the results from the last message to the first,
     * or receive one message at a time there.
     *
     * <p>After an exception, which of the messages were recorded is not said (on PostgreSQL,
     * messages after a reused key may be): roll the transaction back.
     *
     * @throws IllegalStateException if {@code tx} is in auto-commit mode
     * @throws InvalidInputException if a key, tenant or payload size is refused
     * @throws KeyReuseException if a key was seen with a different payload fingerprint
     */
    default List<Receipt> receiveAll(Connection tx, List<InboundMessage> messages) {
        Args.notNull(tx, "tx");
        Args.notNull(messages, "messages");
        List<Receipt> receipts = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            receipts.add(receive(tx, Args.notNull(messages.get(i), "messages[" + i + "]")));
        }
        return receipts;
    }

    /**
     * Stores {@code result} for a message that {@link #receive} reported FIRST in this same
     * transaction; later duplicates get it back. One round trip on PostgreSQL. Any other call is
     * refused and changes nothing: no receive in this transaction, a receive that reported
     * DUPLICATE (or anything but FIRST), or an entry completed by an earlier transaction, whose
     * stored result is never replaced.
     *
     * <p>PostgreSQL knows the transaction by its id ({@code txid_current()}). MariaDB and MySQL
     * give SQL no transaction id, so there a FIRST {@code receive} writes a random token into the
     * entry and sets a savepoint named after it ({@code txbox_<token>}); this call stores only
     * while the transaction still has that savepoint and the entry that token (four round trips).
     * Releasing a savepoint set before {@code receive} also releases txbox's, and this call then
     * refuses: store first. This call releases and sets its savepoint again, which also releases
     * savepoints set after {@code receive}.
     *
     * @throws InvalidInputException if {@code result} is larger than {@code maxPayloadBytes}
     * @throws IllegalStateException if {@code tx} is in auto-commit mode; nothing is written
     * @throws TxboxException if {@code receive} did not report FIRST for the key in this
     *     transaction; nothing is written
     */
    void storeResult(Connection tx, InboundMessage message, byte[] result);

    /**
     * Runs the common case in one transaction on a connection from {@code ds}: receive, the
     * handler (for a first delivery only), store its result, commit. Uses the connection's
     * isolation level (PostgreSQL's default is READ COMMITTED).
     *
     * <p>Serialization failures and deadlocks (SQL states 40001, 40P01) roll back and retry
     * the whole transaction up to {@code transactionRetries} times (a handler that still hits
     * one after that counts as failed). A handler exception rolls
     * back the business writes; the attempt is then counted and the error recorded in a
     * separate transaction (retried on the same conflicts as often), and the outcome is FAILED,
     * or DEAD once {@code maxAttempts} is reached. A reused key gives KEY_REUSED.
     *
     * @throws RetryableException if the database stayed in conflict or unreachable; nothing
     *     was recorded, deliver the message again later
     * @throws IllegalStateException inside an active Spring transaction (see the class
     *     documentation); nothing was written
     * @throws InvalidInputException if the key, tenant or payload size is refused, or the
     *     handler returned a result larger than {@code maxPayloadBytes}; the transaction is
     *     rolled back (the handler's writes included), no entry is written and no attempt is
     *     counted, so the next delivery runs the handler again
     */
    Outcome process(DataSource ds, InboundMessage message, Handler handler);

    /**
     * {@link #process} for several messages in order, each in a transaction of its own (its own
     * outcome, handler run, retries and failure count), on one connection from {@code ds} held
     * for the call. On PostgreSQL each transaction's {@code COMMIT} travels in one round trip with
     * the next message's inbox insert ({@code COMMIT; BEGIN; INSERT ...}), one round trip fewer
     * per message; the last commits alone. The connection goes back with no transaction open and
     * its auto-commit as it was.
     *
     * <p>Returns the outcomes of a prefix of {@code messages}, in order; an outcome is returned
     * only once its transaction's commit went through. {@code more} is asked after each message,
     * before the next one runs (for PROCESSED, before its commit): {@code false} stops the chain
     * there. The chain also stops, without an outcome, at a message it leaves for the caller to
     * run through {@link #process}: one whose commit failed or is unknown (a lost connection),
     * one whose transaction failed or whose handler hit a serialization failure or deadlock, or
     * one the inbox refuses. Such a message was not committed, or is a duplicate when it runs again.
     *
     * <p>The default runs nothing and returns an empty list.
     *
     * @throws IllegalStateException inside an active Spring transaction (see the class
     *     documentation); nothing was written
     */
    default List<Outcome> processChained(DataSource ds, List<InboundMessage> messages, Handler handler,
            Predicate<Outcome> more) {
        Args.notNull(ds, "ds");
        Args.notNull(messages, "messages");
        Args.notNull(handler, "handler");
        Args.notNull(more, "more");
        return List.of();
    }

    /**
     * Counts a failed attempt at {@code message} and records {@code error}, in a transaction of
     * its own, for adapters that run the business transaction themselves and rolled it back.
     * The entry becomes FAILED, or DEAD once it has failed {@code maxAttempts} times (releases
     * of a two-phase claim are not failures). If a
     * concurrent delivery completed the key meanwhile, the outcome is DUPLICATE and nothing
     * is counted. A serialization failure or deadlock (SQL states 40001, 40P01) rolls back and
     * runs the transaction again, up to {@code transactionRetries} times. One round trip (two if
     * the key was completed, dead or reused); on MariaDB/MySQL a write and a locking read in one
     * transaction, committed by the inbox when the connection came in auto-commit mode.
     *
     * @throws RetryableException if the database stayed in conflict or unreachable; nothing
     *     was counted
     */
    Outcome recordFailure(DataSource ds, InboundMessage message, Throwable error);

    // ---- two-phase mode ----

    /**
     * Claims {@code message} for this worker and commits the claim at once: the entry becomes
     * PROCESSING with a lease of {@code lease} measured by the database clock. While the lease
     * holds, other claims get IN_FLIGHT. After it runs out, the next claim counts a failure
     * (the worker neither completed, failed nor released) and takes over with the next fencing
     * token; if that was the entry's {@code maxAttempts}-th failure it becomes DEAD instead (a
     * message that keeps crashing its worker).
     *
     * <p>Cost: one round trip when acquired, two otherwise (always two on MariaDB/MySQL: the
     * write, then a locking read).
     *
     * @throws KeyReuseException if the key was seen with a different payload fingerprint
     */
    Claim claim(DataSource ds, InboundMessage message);

    /**
     * Completes an acquired claim in a transaction of its own, storing {@code result} for
     * later duplicates.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    void complete(DataSource ds, Claim claim, byte @Nullable [] result);

    /**
     * Completes an acquired claim inside the caller's transaction, so the completion commits
     * together with business writes and outbox messages.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written by this call
     *     and the caller must roll {@code tx} back to discard its own writes
     * @throws IllegalStateException if {@code tx} is in auto-commit mode; nothing is written
     */
    void complete(Connection tx, Claim claim, byte @Nullable [] result);

    /**
     * Completes an acquired claim with a response to replay: a status code, headers (in order;
     * a name may repeat) and a body. Used by the HTTP Idempotency-Key support.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    void complete(DataSource ds, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body);

    /**
     * Completes an acquired claim with a response to replay inside the caller's transaction,
     * so the stored response commits together with the request's business writes and outbox
     * messages, or not at all. Fenced like the other completions. One round trip; the entry's
     * row stays locked until {@code tx} ends, so commit soon after.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written by this call
     *     and the caller must roll {@code tx} back to discard its own writes
     * @throws IllegalStateException if {@code tx} is in auto-commit mode; nothing is written
     */
    void complete(Connection tx, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body);

    /**
     * Fails an acquired claim: counts a failure and records {@code error}; the entry becomes
     * FAILED (the next claim runs it again) or DEAD at its {@code maxAttempts}-th failure.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    Outcome fail(DataSource ds, Claim claim, Throwable error);

    /**
     * Gives an acquired claim back without counting a failure, so the next claim runs again
     * at once; for outcomes that must not be remembered, such as an HTTP 5xx. Releases never
     * make an entry DEAD: only failures count toward {@code maxAttempts}. The next claim still
     * gets the next fencing token, so {@link Claim#fencingToken()} and {@code attempts} count
     * releases too.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    void release(DataSource ds, Claim claim);

    /**
     * This inbox's two-phase mode as a {@link TwoPhaseStore} on {@code ds}: each call is
     * {@link #claim}, {@link #complete(DataSource, Claim, byte[])}, {@link #fail} or
     * {@link #release} on {@code ds}, one short transaction of its own. For what takes any
     * two-phase store (the HTTP helper, the consumer runners), so that it runs on the database
     * inbox and on a Redis store alike. Costs nothing to create; a wrapping inbox (a Redis cache
     * in front) keeps its behaviour, since the view calls this inbox.
     */
    default TwoPhaseStore twoPhase(DataSource ds) {
        return new DatabaseTwoPhase(this, ds);
    }

    // ---- operators ----

    /**
     * Makes a DEAD entry retryable: the next delivery of the key runs the handler again, with
     * a fresh count of {@code maxAttempts}.
     *
     * @return {@code false} if there was no DEAD entry for the key
     */
    boolean resetDead(DataSource ds, String key);

    /** {@link #resetDead(DataSource, String)} for a key of {@code tenant}. */
    boolean resetDead(DataSource ds, String key, @Nullable String tenant);

    /** Up to {@code limit} DEAD entries of this consumer (all tenants), oldest first. */
    List<DeadEntry> listDead(DataSource ds, int limit);

    /**
     * The parked ordering keys of this consumer on {@code ds}: sequenced dead letters, kept by
     * consumers built with {@code parkKeys(true)}, and the operator calls that resolve them
     * (retry or skip through a handler). Costs nothing to create. The default refuses: only the
     * database inbox keeps parked keys.
     *
     * @throws io.txbox.ConfigException if this implementation keeps no parked keys
     */
    default ParkedKeys parkedKeys(DataSource ds) {
        Args.notNull(ds, "ds");
        throw new ConfigException(getClass().getName() + " keeps no parked keys; use the database inbox ("
                + "Inbox.builder(..).build())");
    }

    // ---- retention ----

    /**
     * Deletes this consumer's completed entries older than the retention window, in batches
     * of 1,000 rows, each in its own short transaction, skipping rows
     * that are locked. Served by a partial index on {@code completed_at}. After an entry is
     * gone, a redelivery of its key is FIRST again: the window is the span of the dedup
     * guarantee.
     *
     * @return the number of entries deleted
     */
    int purgeCompleted(DataSource ds);

    /**
     * Starts {@link #purgeCompleted} on a daemon thread now and then every {@code every}.
     * Failures are logged and retried at the next run. Close the task to stop it.
     */
    RetentionTask retentionTask(DataSource ds, Duration every);

    /**
     * Builds an {@link Inbox}. Each option is checked as it is set; the messages name the
     * option and the bad value. Not thread-safe; {@link #build()} may be called repeatedly.
     */
    final class Builder {
        final String consumer;
        TxboxTables tables = TxboxTables.defaults();
        int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        Fingerprint fingerprint = Fingerprint.sha256();
        Duration lease = DEFAULT_LEASE;
        Duration retention = DEFAULT_RETENTION;
        Clock clock = Clock.systemUTC();
        int transactionRetries = DEFAULT_TRANSACTION_RETRIES;
        InboxListener listener = InboxListener.NONE;
        boolean hashKeysInLogs;

        private Builder(String consumer) {
            this.consumer = KeyRules.consumer(consumer);
        }

        /** Where the tables live; default {@link TxboxTables#defaults()}. */
        public Builder tables(TxboxTables tables) {
            this.tables = Args.configured(tables, "tables");
            return this;
        }

        /**
         * Failures after which an entry is DEAD; default {@value Inbox#DEFAULT_MAX_ATTEMPTS}. At
         * least 1. A failure is a handler error counted by {@link Inbox#process} or
         * {@link Inbox#recordFailure}, a {@link Inbox#fail}, or a two-phase lease that ran out
         * before its worker completed, failed or released it. A {@link Inbox#release} is not a
         * failure and never brings an entry closer to DEAD, however often it happens.
         */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = Args.atLeast(maxAttempts, 1, "maxAttempts");
            return this;
        }

        /**
         * Largest payload (and stored result) accepted, in bytes; default
         * {@value Inbox#DEFAULT_MAX_PAYLOAD_BYTES}. Larger ones are refused with
         * {@link InvalidInputException} before anything is written. At least 0.
         */
        public Builder maxPayloadBytes(int maxPayloadBytes) {
            if (maxPayloadBytes < 0) {
                throw new ConfigException("maxPayloadBytes must not be negative, but was " + maxPayloadBytes);
            }
            this.maxPayloadBytes = maxPayloadBytes;
            return this;
        }

        /** How payloads are fingerprinted; default {@link Fingerprint#sha256()} of the bytes. */
        public Builder fingerprint(Fingerprint fingerprint) {
            this.fingerprint = Args.configured(fingerprint, "fingerprint");
            return this;
        }

        /**
         * Two-phase lease length, measured by the database clock; default 30 s. Between 1 ms
         * and 1 day.
         */
        public Builder lease(Duration lease) {
            Args.configured(lease, "lease");
            if (lease.compareTo(Duration.ofMillis(1)) < 0 || lease.compareTo(Duration.ofDays(1)) > 0) {
                throw new ConfigException("lease must be between 1 ms and 1 day, but was " + lease);
            }
            this.lease = lease;
            return this;
        }

        /**
         * How long completed entries are kept, and so how long a redelivery is recognised as a
         * duplicate; default 7 days. At least 1 second.
         */
        public Builder retention(Duration retention) {
            Args.configured(retention, "retention");
            if (retention.compareTo(Duration.ofSeconds(1)) < 0) {
                throw new ConfigException("retention must be at least 1 second, but was " + retention);
            }
            this.retention = retention;
            return this;
        }

        /** The clock the retention cutoff is computed from; default the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Args.configured(clock, "clock");
            return this;
        }

        /**
         * How often {@link Inbox#process} and {@link Inbox#recordFailure} retry a transaction
         * after a serialization failure or deadlock (the failure count of {@code process} and
         * {@code processChained} included); default {@value Inbox#DEFAULT_TRANSACTION_RETRIES}.
         * 0 to 100.
         */
        public Builder transactionRetries(int transactionRetries) {
            this.transactionRetries = Args.between(transactionRetries, 0, 100, "transactionRetries");
            return this;
        }

        /** Hears every outcome (metrics); default {@link InboxListener#NONE}. */
        public Builder listener(InboxListener listener) {
            this.listener = Args.configured(listener, "listener");
            return this;
        }

        /**
         * Whether the inbox's own log lines and the messages of the {@code InvalidInputException}s,
         * {@code RetryableException}s and {@code TxboxException}s it raises show keys hashed:
         * {@code sha256:} and the first 16 hex digits of the SHA-256 of the key's UTF-8 bytes,
         * instead of the key itself; default {@code false}. Turn it on when keys carry personal
         * data, together with the consumers' {@code hashKeysInLogs}, which also hashes the key
         * in the exception messages the consumers log. {@link KeyReuseException} and
         * {@link LeaseLostException} still name the key, which callers read with {@code key()},
         * as do {@link Claim} and {@link InboundMessage}. Payloads are never logged either way.
         */
        public Builder hashKeysInLogs(boolean hashKeysInLogs) {
            this.hashKeysInLogs = hashKeysInLogs;
            return this;
        }

        /** An immutable, thread-safe inbox. Renders its SQL once, here. */
        public Inbox build() {
            return new InboxImpl(this);
        }
    }
}
