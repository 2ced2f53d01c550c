package io.txbox.redis;

import io.txbox.ConfigException;
import io.txbox.internal.Args;
import io.txbox.inbox.Inbox;
import java.time.Clock;
import java.time.Duration;

/**
 * The database {@link Inbox} with Redis in front: a cache of completed results and a marker of
 * deliveries in flight, so that duplicates are answered without opening a database
 * transaction. It is an {@link Inbox}, so it plugs into everything that takes one: the Kafka
 * and RabbitMQ consumers, {@code HttpIdempotency}, a hand-written loop.
 *
 * <h2>What Redis answers</h2>
 * {@link #process} and {@link #claim} first run one Lua script on the entry's Redis key:
 * <ul>
 *   <li>a cached completion with the same payload fingerprint (computed by the database
 *       inbox's {@link Inbox#fingerprint()}): DUPLICATE with the stored
 *       result (and status and headers), no database work;
 *   <li>a marker: another delivery of the key is in flight, answered IN_FLIGHT (not final: the
 *       consumer redelivers it after its backoff, and then usually gets the cached result), or
 *       sent to the database with {@link Builder#answerInFlight answerInFlight(false)};
 *   <li>nothing: the script sets a marker (TTL {@code inFlightTtl}) and the delivery goes to the
 *       database inbox as usual. When the database says PROCESSED or DUPLICATE, the result is
 *       cached for {@code cacheTtl}; a two-phase claim the database ACQUIRED keeps the marker
 *       until {@code complete} (cached), {@code fail} or {@code release}; otherwise the marker
 *       is removed.
 * </ul>
 * Before the script, what this process itself knows answers without a round trip: a
 * duplicate of a {@code process} delivery this process is running is IN_FLIGHT, and one of a
 * key whose {@code process} this process committed within min({@code cacheTtl},
 * {@code inFlightTtl}) is DUPLICATE with that result (up to {@code maxCachedResultBytes}; at
 * most 8 MiB of results in all). Both are what the script would answer.
 *
 * <p>A fingerprint that differs from the cached one, a result larger than
 * {@code maxCachedResultBytes}, and a completion inside the caller's transaction
 * ({@code complete(Connection, ..)}, whose commit the inbox cannot see) are never answered from
 * Redis: they go to the database, which decides.
 *
 * <h2>Why Redis cannot break exactly-once effects</h2>
 * Every first run still goes through the database inbox, which alone decides FIRST and holds
 * the row lock; Redis only answers duplicates of deliveries the database has already
 * completed, or says "try again later". If Redis loses keys (restart without persistence,
 * FLUSHALL, failover), the next delivery of a key simply goes to the database. If Redis fails
 * or times out ({@code commandTimeout}), the delivery goes to the database; after
 * {@code failureThreshold} failures in a row a circuit breaker stops asking Redis for
 * {@code openFor}, then lets one delivery probe it. No delivery fails because Redis is down.
 * A check that timed out may still run once a slow Redis catches up and set its marker after
 * the delivery went to the database: that delivery replaces or removes the marker as if it had
 * set it, and such writes are not skipped while the breaker is open, so a completed key is not
 * answered IN_FLIGHT once Redis answers again.
 *
 * <p>What Redis can change: a duplicate that arrives while the first delivery runs is answered
 * IN_FLIGHT instead of waiting on the row lock; a crashed worker's duplicates are answered
 * IN_FLIGHT until its marker expires ({@code inFlightTtl}); a cached completion is replayed
 * until {@code cacheTtl} even if the database entry was purged meanwhile, so keep
 * {@code cacheTtl} shorter than the inbox's retention.
 *
 * <p>Thread-safe. Holds one Redis connection until {@link #close()}; the database inbox needs no closing.
 */
public interface HybridInbox extends Inbox, AutoCloseable {
    /** Default {@link Builder#redisUrl}: {@value}. */
    String DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
    /** Default {@link Builder#commandTimeout}: 250 ms. */
    Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofMillis(250);
    /** Default {@link Builder#inFlightTtl}: 30 seconds, the database inbox's default lease. */
    Duration DEFAULT_IN_FLIGHT_TTL = Duration.ofSeconds(30);
    /** Default {@link Builder#cacheTtl}: 1 hour. */
    Duration DEFAULT_CACHE_TTL = Duration.ofHours(1);
    /** Default {@link Builder#maxCachedResultBytes}: {@value} (64 KiB). */
    int DEFAULT_MAX_CACHED_RESULT_BYTES = 64 * 1024;
    /** Default {@link Builder#failureThreshold}: {@value}. */
    int DEFAULT_FAILURE_THRESHOLD = 5;
    /** Default {@link Builder#openFor}: 5 seconds. */
    Duration DEFAULT_OPEN_FOR = Duration.ofSeconds(5);

    /** A builder for Redis in front of {@code database}, the inbox that stays the source of truth. */
    static Builder builder(Inbox database) {
        return new Builder(database);
    }

    /** The circuit breaker's state now. */
    BreakerState breakerState();

    /** Closes the Redis connection. The database inbox is left as it is. */
    @Override
    void close();

    /**
     * Builds a {@link HybridInbox}. Each option is checked as it is set; the messages name the
     * option and the bad value.
     */
    final class Builder {
        final Inbox database;
        String redisUrl = DEFAULT_REDIS_URL;
        String keyPrefix = Keys.DEFAULT_PREFIX;
        Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
        Duration inFlightTtl = DEFAULT_IN_FLIGHT_TTL;
        Duration cacheTtl = DEFAULT_CACHE_TTL;
        int maxCachedResultBytes = DEFAULT_MAX_CACHED_RESULT_BYTES;
        boolean answerInFlight = true;
        int failureThreshold = DEFAULT_FAILURE_THRESHOLD;
        Duration openFor = DEFAULT_OPEN_FOR;
        Clock clock = Clock.systemUTC();
        RedisListener listener = RedisListener.NONE;

        private Builder(Inbox database) {
            if (database == null) {
                throw new ConfigException("database must not be null");
            }
            if (database instanceof HybridInbox) {
                throw new ConfigException("database must be the database inbox, not another HybridInbox");
            }
            this.database = database;
        }

        /**
         * The Redis server, as {@code redis://[[user:]password@]host:port[/database]} or
         * {@code rediss://..} for TLS; default {@value HybridInbox#DEFAULT_REDIS_URL}. Checked now: the host
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
         * How long one Redis call may take before the delivery goes to the database instead;
         * default 250 ms. Between 1 ms and 10 s.
         */
        public Builder commandTimeout(Duration commandTimeout) {
            this.commandTimeout = Args.between(commandTimeout, Duration.ofMillis(1),
                    Duration.ofSeconds(10), "commandTimeout");
            return this;
        }

        /**
         * Prefix of every Redis key written; default {@code "txbox:"}. 0 to 64 characters from
         * {@code A-Z a-z 0-9 . _ : / { } -}.
         */
        public Builder keyPrefix(String keyPrefix) {
            this.keyPrefix = Keys.checkPrefix(keyPrefix);
            return this;
        }

        /**
         * TTL of the in-flight marker: how long duplicates of a delivery whose worker died are
         * answered IN_FLIGHT; default 30 s. Keep it at most the inbox's lease. Between 1 ms and 1 day.
         */
        public Builder inFlightTtl(Duration inFlightTtl) {
            this.inFlightTtl = Args.between(inFlightTtl, Duration.ofMillis(1), Duration.ofDays(1), "inFlightTtl");
            return this;
        }

        /**
         * How long a completed result stays cached; default 1 hour. Keep it shorter than the
         * inbox's retention. Between 1 second and 30 days.
         */
        public Builder cacheTtl(Duration cacheTtl) {
            this.cacheTtl = Args.between(cacheTtl, Duration.ofSeconds(1), Duration.ofDays(30), "cacheTtl");
            return this;
        }

        /**
         * Largest result cached, in bytes; default {@value HybridInbox#DEFAULT_MAX_CACHED_RESULT_BYTES}.
         * Duplicates of a key with a larger result are answered by the database. 0 to 16 MiB.
         */
        public Builder maxCachedResultBytes(int maxCachedResultBytes) {
            if (maxCachedResultBytes < 0 || maxCachedResultBytes > 16 * 1024 * 1024) {
                throw new ConfigException("maxCachedResultBytes must be between 0 and 16777216, but was "
                        + maxCachedResultBytes);
            }
            this.maxCachedResultBytes = maxCachedResultBytes;
            return this;
        }

        /**
         * Whether a duplicate of a delivery still in flight is answered IN_FLIGHT from Redis;
         * default {@code true}. With {@code false} it goes to the database and, in atomic mode,
         * waits on the row lock there, then gets DUPLICATE: one transaction more, but no
         * redelivery (a Kafka consumer's partition does not wait for its backoff). Completed
         * duplicates are answered from the cache either way.
         */
        public Builder answerInFlight(boolean answerInFlight) {
            this.answerInFlight = answerInFlight;
            return this;
        }

        /** Redis failures in a row that open the circuit breaker; default {@value HybridInbox#DEFAULT_FAILURE_THRESHOLD}. 1 to 1000. */
        public Builder failureThreshold(int failureThreshold) {
            if (failureThreshold < 1 || failureThreshold > 1000) {
                throw new ConfigException("failureThreshold must be between 1 and 1000, but was " + failureThreshold);
            }
            this.failureThreshold = failureThreshold;
            return this;
        }

        /** How long an open breaker skips Redis before one probe; default 5 s. Between 1 ms and 1 hour. */
        public Builder openFor(Duration openFor) {
            this.openFor = Args.between(openFor, Duration.ofMillis(1), Duration.ofHours(1), "openFor");
            return this;
        }

        /** The clock the breaker's open time is measured on; default the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Args.configured(clock, "clock");
            return this;
        }

        /** Hears fast-path answers and breaker transitions (metrics); default {@link RedisListener#NONE}. */
        public Builder listener(RedisListener listener) {
            this.listener = Args.configured(listener, "listener");
            return this;
        }

        /**
         * A thread-safe hybrid inbox. Connects to Redis on first use; a Redis that is down now
         * costs the first deliveries a failed call each until the breaker opens.
         */
        public HybridInbox build() {
            return new HybridInboxImpl(this);
        }
    }
}
