package io.txbox.redis;

import io.txbox.ConfigException;
import io.txbox.internal.Args;
import io.txbox.InvalidInputException;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.internal.StoreOptions;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Two-phase claims kept in Redis alone, for work with no relational database (a service that
 * only calls external APIs). The same protocol as the database inbox's two-phase mode:
 * {@link #claim}, do the work, then {@link #complete}, {@link #fail} or {@link #release} with
 * the claim's fencing token. Each call is one Lua script, atomic on the server: one round trip.
 *
 * <p>What it guarantees, on a Redis that keeps its writes: one live lease per key (concurrent
 * claims of a key: exactly one is ACQUIRED); leases measured by the Redis server's clock; a
 * fencing token that only grows, per consumer, across lease expiries and across the retention
 * TTL of entries, so a worker whose lease was taken over cannot complete, fail or release (the
 * counter is one Redis key per consumer, {@code <prefix>store|<consumer>|fence}, without a TTL
 * on purpose; nothing kept per message key outlives its entry);
 * a key seen again with another payload fingerprint is refused with {@link KeyReuseException};
 * DEAD after {@code maxAttempts} failed or crashed attempts (a {@link #release} does not count).
 *
 * <p>What it cannot guarantee: Redis acknowledges a write before it is on disk unless it runs
 * with {@code appendonly yes} and {@code appendfsync always}; a crash then loses acknowledged
 * claims and completions, and a failover to a replica loses the writes the replica had not
 * received. Either way a completed key can run again. Entries expire after {@code retention};
 * after that a key is new again. Use the database inbox when a duplicate effect is not
 * acceptable.
 *
 * <p>It is a {@link TwoPhaseStore}, so it plugs into what takes one: the HTTP helper
 * ({@code HttpIdempotency.builder(store)}) and the consumer runners.
 *
 * <p>Thread-safe; holds one Redis connection until {@link #close()}.
 */
public interface RedisStore extends TwoPhaseStore, AutoCloseable {
    /** Default {@link Builder#maxAttempts}: {@value}. */
    int DEFAULT_MAX_ATTEMPTS = StoreOptions.DEFAULT_MAX_ATTEMPTS;
    /** Default {@link Builder#lease}: 30 seconds. */
    Duration DEFAULT_LEASE = StoreOptions.DEFAULT_LEASE;
    /** Default {@link Builder#retention}: 1 day. */
    Duration DEFAULT_RETENTION = StoreOptions.DEFAULT_RETENTION;
    /** Default {@link Builder#maxResultBytes}: {@value} (256 KiB). */
    int DEFAULT_MAX_RESULT_BYTES = StoreOptions.DEFAULT_MAX_RESULT_BYTES;
    /** Default {@link Builder#redisUrl}: {@value}. */
    String DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
    /** Default {@link Builder#commandTimeout}: 2 seconds. */
    Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);

    /**
     * A builder for the store of {@code consumer}: 1 to 128 characters from
     * {@code A-Z a-z 0-9 . _ : / -}, as for the database inbox.
     */
    static Builder builder(String consumer) {
        return new Builder(consumer);
    }

    /**
     * Claims {@code message}: a new key, a FAILED or released one, or one whose lease ran out is
     * ACQUIRED with a lease of {@code lease} (Redis time) and a new fencing token. While a
     * lease holds, other claims get IN_FLIGHT; a completed key gives DUPLICATE with the stored
     * result; a key whose attempts are used up gives DEAD. An expired lease at
     * {@code maxAttempts} makes the key DEAD (a message that keeps crashing its worker).
     *
     * <p>{@link Claim#fencingToken()}: for ACQUIRED, the token that fences this claim (grows
     * with every acquisition of any key of this consumer); otherwise the key's attempts so far.
     *
     * @throws InvalidInputException if the key or tenant breaks the inbox's key rules
     * @throws KeyReuseException if the key was claimed with a different payload fingerprint
     * @throws TxboxException if Redis failed or timed out; nothing is known to have been written
     */
    @Override
    Claim claim(InboundMessage message);

    /**
     * Completes an acquired claim and stores {@code result} for later duplicates, until the
     * retention TTL. The body of a response ({@code complete(claim, status, headers, body)})
     * counts against {@code maxResultBytes} the same way.
     *
     * @throws InvalidInputException if {@code result} is larger than {@code maxResultBytes}; nothing is written
     * @throws LeaseLostException if the claim was taken over or has expired from Redis; nothing is written
     */
    @Override
    void complete(Claim claim, byte @Nullable [] result);

    /**
     * Makes a DEAD key claimable again with a fresh count of attempts.
     *
     * @return {@code false} if the key was not DEAD
     */
    boolean resetDead(String key, @Nullable String tenant);

    /** Closes the Redis connection. */
    @Override
    void close();

    /**
     * Builds a {@link RedisStore}. Each option is checked as it is set; the messages name the
     * option and the bad value.
     */
    final class Builder {
        final StoreOptions options;
        String redisUrl = DEFAULT_REDIS_URL;
        String keyPrefix = Keys.DEFAULT_PREFIX;
        Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;

        private Builder(String consumer) {
            this.options = new StoreOptions(consumer, 64 * 1024 * 1024);
        }

        /**
         * The Redis server, as {@code redis://[[user:]password@]host:port[/database]} or
         * {@code rediss://..} for TLS; default {@value RedisStore#DEFAULT_REDIS_URL}. Checked now: the host
         * name must parse and the port, if given, be from 1 to 65535 (a URL Lettuce would read as
         * another server, such as {@code host:notaport} taken as a host name on port 6379, is
         * refused). Lettuce's {@code redis-sentinel://} and {@code redis-socket://} forms are
         * checked by Lettuce alone.
         *
         * @throws ConfigException naming the URL (password masked) and what is wrong with it
         */
        public Builder redisUrl(String redisUrl) {
            this.redisUrl = RedisLink.checkUrl(redisUrl);
            return this;
        }

        /**
         * Prefix of every Redis key the store writes; default {@code "txbox:"}. 0 to 64 characters
         * from {@code A-Z a-z 0-9 . _ : / { } -}.
         */
        public Builder keyPrefix(String keyPrefix) {
            this.keyPrefix = Keys.checkPrefix(keyPrefix);
            return this;
        }

        /** How long one Redis call may take before it fails; default 2 s. Between 1 ms and 1 minute. */
        public Builder commandTimeout(Duration commandTimeout) {
            this.commandTimeout = Args.between(commandTimeout, Duration.ofMillis(1),
                    Duration.ofMinutes(1), "commandTimeout");
            return this;
        }

        /** Attempts after which a key is DEAD; default {@value RedisStore#DEFAULT_MAX_ATTEMPTS}. At least 1. */
        public Builder maxAttempts(int maxAttempts) {
            options.maxAttempts(maxAttempts);
            return this;
        }

        /** Lease length, measured by the Redis server's clock; default 30 s. Between 1 ms and 1 day. */
        public Builder lease(Duration lease) {
            options.lease(lease);
            return this;
        }

        /**
         * How long an entry is kept after its last change (Redis TTL), and so how long a
         * redelivery is recognised; default 1 day. A claimed entry is kept at least until its
         * lease ends: its TTL is the longer of {@code retention} and {@link #lease}. Between 1
         * second and 365 days.
         */
        public Builder retention(Duration retention) {
            options.retention(retention);
            return this;
        }

        /**
         * Largest stored result (body) accepted, in bytes; default
         * {@value RedisStore#DEFAULT_MAX_RESULT_BYTES}. Larger ones are refused with
         * {@link InvalidInputException}. 0 to 64 MiB.
         */
        public Builder maxResultBytes(int maxResultBytes) {
            options.maxResultBytes(maxResultBytes);
            return this;
        }

        /** How payloads are fingerprinted; default {@link Fingerprint#sha256()}. */
        public Builder fingerprint(Fingerprint fingerprint) {
            options.fingerprint(fingerprint);
            return this;
        }

        /**
         * A thread-safe store. Loads its Lua scripts into Redis if it answers now; otherwise they
         * are sent on first use.
         */
        public RedisStore build() {
            return new RedisStoreImpl(this);
        }
    }
}
