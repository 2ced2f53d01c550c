package io.txbox.relay;

import io.txbox.internal.Args;
import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.internal.Backoff;
import io.txbox.relay.internal.RelaySettings;
import java.lang.management.ManagementFactory;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Moves committed outbox rows to their brokers: claims them in id order, publishes them, and
 * deletes each row only after its broker confirmed it. Delivery is at least once; the
 * receiving inbox absorbs duplicates.
 *
 * <pre>{@code
 * KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers("localhost:9092").build();
 * RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(cf).build();
 * try (Relay relay = Relay.builder()
 *         .dataSource(ds)
 *         .route("payments", kafka.topic("payments"))
 *         .route("shipping", rabbit.exchange("shipping"))
 *         .wakeOn(outbox)
 *         .build()) {
 *     relay.start();
 *     ...
 * }
 * }</pre>
 *
 * <h2>How it works</h2>
 * Every outbox row belongs to one of 64 lanes (a hash of its routing key). Each relay worker
 * registers as a member, leases a fair share of the lanes, and publishes only rows of its own
 * lanes; taking over a lane increments the lane's fence. A batch is one transaction: it locks
 * and renews the worker's lanes (checking the fences), claims up to {@link
 * Builder#batchSize(int) batchSize} rows of those lanes in id order (no row locks: the locked
 * lanes make the worker their only claimant), publishes them all, waits for the confirmations for at most {@link
 * Builder#publishTimeout(Duration) publishTimeout}, then deletes the confirmed rows, schedules
 * a retry for the failed ones and moves the hopeless ones to the dead-letter table, and
 * commits.
 *
 * <h2>Ordering</h2>
 * The promise: if transaction T1 commits before transaction T2 begins, and both send a row with
 * the same routing key to the same destination, T1's row is published before T2's. It holds with
 * any number of relay instances and workers, on PostgreSQL and on MariaDB, through stalls and
 * pauses of a worker, restarts, lane takeovers, broker outages and retries:
 * <ul>
 *   <li>Rows of one key are claimed in id order by one worker at a time. A claim that sees T2's
 *       row sees T1's too (it committed before T2 began). A batch transaction's later claims take
 *       only rows that were due when its first claim ran, and none once a row committed below the
 *       rows it claimed: that row's transaction may hold a later row of its key above them. Rows of
 *       one key sent in one transaction go out in id order as well.</li>
 *   <li>A failed row holds back its own key (its routing key in its destination) until its
 *       retry: the claim leaves out the key's later rows while the row waits for its backoff, and
 *       every other key flows at full speed, those of its lane included. One exception, from the
 *       broker: rows of the key that were already on the wire in the same batch when the broker
 *       refused the row asynchronously can reach it before the retry (a send that fails at once
 *       holds back the rest of its key's rows in the batch).</li>
 *   <li>Poison rows park their key. After {@link Builder#maxAttempts(int) maxAttempts} (or a
 *       refusal for good, such as a message too large) the row is dead-lettered and its key stays
 *       <em>parked</em>: the key's later rows wait in the outbox, in order, and nothing of the key
 *       is published until an operator retries the dead row (it goes back first, with its id, and
 *       the key resumes in order) or skips it ({@link DeadLetters}, {@code txbox-relay dead}). A
 *       parked key survives relay restarts and lane takeovers: the parking is in the database.
 *       {@link Builder#moveOnDestinations} restores "dead-letter and move on" per destination: the
 *       key's later rows go out at once, and the dead row, if retried, after them. Rows without a
 *       routing key are each their own key: nothing waits behind them. A destination without a
 *       route dead-letters all its rows, in id order, and parks nothing.</li>
 *   <li>Rows of one key from overlapping transactions go out in id order among the rows one claim
 *       sees; a row that commits after a higher id of its key was already published follows it.</li>
 *   <li>A delayed row ({@code OutboxMessage.delay}, {@code availableAt}) does not hold back its
 *       key: it is published once due, after whatever of its key was published before. A delay is
 *       a schedule for that one message; to delay a key's later messages too, delay them as
 *       well.</li>
 *   <li>In a move-on destination, a dead-lettered row no longer holds back its key; retried
 *       from the dead letters, it is published after what its key published meanwhile.</li>
 * </ul>
 * The holds live in a small table ({@code outbox_key_hold}, one row per held or parked key); the
 * claim excludes a held key's later rows with an anti-join against it, so a claim costs the same
 * when no key is held.
 * To spare the claim the index entries of the rows it deleted, a worker's claim starts above a
 * floor, and from the lowest id at least every 5 s. The floor passes an id only once no
 * transaction can still make a row at or below it visible: on PostgreSQL the worker reads which
 * transactions hold a write lock on the outbox ({@code pg_locks}, readable by every role) and
 * waits for them to end. On MariaDB and MySQL, where that takes the {@code PROCESS} privilege,
 * every claim starts from the lowest id. The floor stays below the lowest row a key of the
 * worker's lanes is held at, so a released key's rows are claimed from there, in id order. A
 * delayed row coming due below the floor, or a dead letter of a move-on destination retried with
 * its id, is published by the full claim, at most about 5 s after it is due.
 *
 * <h2>Cost</h2>
 * Each worker holds one connection while running. On PostgreSQL it runs its batch transactions
 * with {@code synchronous_commit = off}: a crash of the database can lose the last deletes, which
 * only republishes those rows (duplicates, absorbed by the inbox), never loses one. On MariaDB and
 * MySQL it sets its connection to READ COMMITTED, so each claim sees the rows committed since the
 * batch began and no statement of it locks a gap that would hold back a {@code send}, with {@code
 * innodb_lock_wait_timeout} and a statement time limit bounded by the lane lease; the settings
 * are reset before the connection goes back to the pool.
 */
public interface Relay extends AutoCloseable {
    /** Default number of worker threads per relay: {@value}. */
    int DEFAULT_WORKERS = 2;
    /** Default rows per batch: {@value}. */
    int DEFAULT_BATCH_SIZE = 2000;
    /** Largest accepted batch size: {@value}. */
    int MAX_BATCH_SIZE = 10_000;
    /** Default poll interval when idle: 200 ms. */
    Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);
    /** Whether a relay listens for the outbox's wake-ups on PostgreSQL by default: {@value}. */
    boolean DEFAULT_LISTEN = true;
    /** Default time a batch waits for broker confirmations: 10 s. */
    Duration DEFAULT_PUBLISH_TIMEOUT = Duration.ofSeconds(10);
    /** Default lane lease: 30 s. A crashed relay's lanes are taken over after this. */
    Duration DEFAULT_LANE_LEASE = Duration.ofSeconds(30);
    /** Default attempts before a row is dead-lettered: {@value}. */
    int DEFAULT_MAX_ATTEMPTS = 10;
    /** Default first retry delay: 500 ms, doubled per attempt. */
    Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(500);
    /** Default longest retry delay: 5 min. */
    Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);
    /** Default interval of the backlog query feeding {@link RelayListener#backlog}: 15 s. */
    Duration DEFAULT_BACKLOG_INTERVAL = Duration.ofSeconds(15);
    /** Default bound on {@link #close()}: 20 s. */
    Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(20);
    /**
     * The SLF4J MDC key holding the relay's {@link #id()} on the relay's own threads (its workers
     * and backlog sampler), so every line they log, txbox's or a publisher's, can carry it:
     * {@value}.
     */
    String MDC_KEY = "txbox.relay";

    static Builder builder() {
        return new Builder();
    }

    /**
     * Starts the workers. Calling it twice is a no-op; calling it after close throws. It opens one
     * connection first to learn which database the DataSource serves (PostgreSQL, MariaDB 10.6+ or
     * MySQL 8.0+) and so which statements to run.
     *
     * @throws io.txbox.ConfigException if the database is none of those, naming the version found and needed
     * @throws io.txbox.TxboxException if no connection can be opened; the relay stays unstarted
     */
    void start();

    /**
     * Wakes every worker to look for rows now rather than at its next poll, with a few quick
     * retries (1, 2, 4, ... ms) for rows whose transaction is just committing.
     */
    void wakeUp();

    /** This relay's id, the prefix of its members' ids and of its log lines. */
    String id();

    /** A cheap snapshot of counters and state; does no I/O. */
    RelayStatus status();

    /**
     * Checks that the database and every broker answer, and that each destination's target
     * exists ({@link Publisher#checkTarget}: RabbitMQ exchanges), each within {@code timeout}. A
     * destination whose rows wait for a missing target is DOWN, naming it. Does I/O; meant for a
     * health endpoint.
     */
    RelayStatus.Health health(Duration timeout);

    /**
     * Stops claiming, lets each worker finish its in-flight batch (deleting what the broker
     * confirmed, scheduling retries for the rest), releases the lanes, and closes the
     * publishers unless {@link Builder#closePublishers(boolean)} was false. Waits at most the
     * shutdown timeout; a batch still running then is rolled back (its connection is aborted and
     * its worker interrupted), which leaves its rows in the outbox to be published again
     * (possibly twice), never lost. The lanes are released in any case, on a fresh connection,
     * so another relay takes them over at once rather than after the lane lease. Idempotent.
     */
    @Override
    void close();

    /** Configures a {@link Relay}. Every option can be set from plain values; each setter checks its argument. */
    final class Builder {
        private @Nullable DataSource dataSource;
        private TxboxTables tables = TxboxTables.defaults();
        private final Map<String, Route> routes = new LinkedHashMap<>();
        /** The {@link RelayOption} values set so far; the others hold their defaults. */
        private final Map<RelayOption<?>, Object> options = new HashMap<>();
        private final List<Outbox> wakeOn = new ArrayList<>();
        private RelayListener listener = RelayListener.NONE;
        private Clock clock = Clock.systemUTC();
        private LongSupplier ticker = System::nanoTime;
        private RandomGenerator random = () -> ThreadLocalRandom.current().nextLong();
        private boolean closePublishers = true;

        Builder() {}

        /** The database holding the outbox. Required. Each worker keeps one connection while running. */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = Args.configured(dataSource, "dataSource");
            return this;
        }

        /** Where the tables live; default {@link TxboxTables#defaults()}. */
        public Builder tables(TxboxTables tables) {
            this.tables = Args.configured(tables, "tables");
            return this;
        }

        /**
         * Sends rows whose destination is {@code destination} through {@code route}. At least one
         * route is required. Rows with a destination that has no route are dead-lettered with
         * the reason, never left to block the relay.
         */
        public Builder route(String destination, Route route) {
            if (destination == null || destination.isBlank()) {
                throw new ConfigException("route destination must be non-blank, but was "
                        + (destination == null ? "null" : Texts.quote(destination)));
            }
            Args.configured(route, "route for " + destination);
            if (routes.putIfAbsent(destination, route) != null) {
                throw new ConfigException("route destination " + Texts.quote(destination) + " is configured twice");
            }
            return this;
        }

        /** Id of this relay in logs and lane ownership; default {@code relay-<pid>-<random>}. Must be unique among running relays. */
        public Builder relayId(String relayId) {
            return RelayOption.RELAY_ID.set(this, relayId);
        }

        /** Worker threads, each with its own lanes and connection; default {@value #DEFAULT_WORKERS}, 1 to 64. */
        public Builder workers(int workers) {
            return RelayOption.WORKERS.set(this, workers);
        }

        /** Rows claimed per batch; default {@value #DEFAULT_BATCH_SIZE}, 1 to {@value #MAX_BATCH_SIZE}. */
        public Builder batchSize(int batchSize) {
            return RelayOption.BATCH_SIZE.set(this, batchSize);
        }

        /**
         * How long an idle worker waits before looking again; default 200 ms, 1 ms to 1 h. A wake-up
         * ({@link #wakeOn}, {@link #listen}), and while listening a batch that found rows, makes it
         * look again within milliseconds instead (after 1, 2, 4, ... 64 ms, none longer than this
         * interval), then it falls back to this interval.
         */
        public Builder pollInterval(Duration pollInterval) {
            return RelayOption.POLL_INTERVAL.set(this, pollInterval);
        }

        /**
         * Whether the relay listens for the wake-ups of outboxes in other processes, so a row
         * sent there is published at once instead of at the next poll; default {@value
         * #DEFAULT_LISTEN}. On PostgreSQL the relay then holds one more connection of the
         * DataSource, on which it runs {@code LISTEN} for its outbox table's channel; each
         * notification ({@code Outbox.Builder.notifyRelays}, at most one per 10 ms per sending
         * outbox) wakes every worker. A lost connection is logged once and opened again with
         * backoff (100 ms doubling up to 5 s); meanwhile the workers poll. A listening worker that
         * found rows looks again after 1, 2, 4, ... 64 ms, which finds the rows sent between two
         * notifications. On MariaDB and MySQL, which have no NOTIFY, it does nothing: there a relay
         * in another process polls every {@link #pollInterval}.
         */
        public Builder listen(boolean listen) {
            return RelayOption.LISTEN.set(this, listen);
        }

        /**
         * Longest wait for the broker to confirm a batch; unconfirmed rows are retried. Default
         * 10 s, 100 ms to 10 min, and less than the lane lease. The batch's transaction is open
         * this long at most.
         */
        public Builder publishTimeout(Duration publishTimeout) {
            return RelayOption.PUBLISH_TIMEOUT.set(this, publishTimeout);
        }

        /** How long a worker's lanes stay its own without renewal; default 30 s, 1 s to 1 h. */
        public Builder laneLease(Duration laneLease) {
            return RelayOption.LANE_LEASE.set(this, laneLease);
        }

        /** Publish attempts before a row is dead-lettered; default {@value #DEFAULT_MAX_ATTEMPTS}, at least 1. */
        public Builder maxAttempts(int maxAttempts) {
            return RelayOption.MAX_ATTEMPTS.set(this, maxAttempts);
        }

        /**
         * Destinations whose dead-lettered rows do not park their routing key: after
         * {@code maxAttempts} (or a refusal for good) the row is dead-lettered and the key's later
         * rows go on at once. Default none: the key stays parked, its later rows waiting in order,
         * until an operator retries or skips the dead row ({@link DeadLetters}). {@code "*"} moves
         * on in every destination. Each call replaces the list.
         */
        public Builder moveOnDestinations(String... destinations) {
            Args.notNull(destinations, "destinations");
            for (String d : destinations) {
                if (d == null || d.isBlank() || d.contains(",")) {
                    throw new ConfigException("moveOnDestinations must be destination names (non-blank, no comma) or *,"
                            + " but had " + (d == null ? "null" : Texts.quote(d)));
                }
            }
            return RelayOption.MOVE_ON_DESTINATIONS.set(this, String.join(",", destinations));
        }

        /**
         * Retry delay after the first failure, doubled per attempt up to {@code maxBackoff}, with
         * jitter of up to half the delay; defaults 500 ms and 5 min.
         */
        public Builder backoff(Duration initialBackoff, Duration maxBackoff) {
            RelayOption.INITIAL_BACKOFF.check(initialBackoff);
            RelayOption.MAX_BACKOFF.set(this, maxBackoff);
            return RelayOption.INITIAL_BACKOFF.set(this, initialBackoff);
        }

        /**
         * How often the relay samples the backlog for {@link RelayListener#backlog}, on its own thread
         * with a pooled connection borrowed for one short query; default 15 s; zero turns it off.
         */
        public Builder backlogInterval(Duration backlogInterval) {
            return RelayOption.BACKLOG_INTERVAL.set(this, backlogInterval);
        }

        /** Bound on {@link Relay#close()}; default 20 s. */
        public Builder shutdownTimeout(Duration shutdownTimeout) {
            return RelayOption.SHUTDOWN_TIMEOUT.set(this, shutdownTimeout);
        }

        /**
         * Wakes the relay whenever {@code outbox} sends in this JVM, so a message goes out right
         * after its commit instead of at the next poll.
         */
        public Builder wakeOn(Outbox outbox) {
            wakeOn.add(Args.configured(outbox, "wakeOn outbox"));
            return this;
        }

        /** Receives counts and latencies; default {@link RelayListener#NONE}. */
        public Builder listener(RelayListener listener) {
            this.listener = Args.configured(listener, "listener");
            return this;
        }

        /** Clock for status timestamps; default {@link Clock#systemUTC()}. Retry times use the database clock. */
        public Builder clock(Clock clock) {
            this.clock = Args.configured(clock, "clock");
            return this;
        }

        /**
         * Source of nanoseconds from an arbitrary origin that times the relay's schedules: lane
         * lease renewal and rebalancing, the pause of a destination whose target is missing, and
         * the publish latency it reports. Default {@code System::nanoTime}; a test passes one it
         * can move forward, so it never waits for a pause to end. Blocking waits (the poll, the
         * publish timeout, {@link Relay#close()}) always run on real time. Like {@code
         * System.nanoTime()}, it must not run backwards.
         */
        public Builder ticker(LongSupplier ticker) {
            this.ticker = Args.configured(ticker, "ticker");
            return this;
        }

        /**
         * Source of the jitter in retry and destination backoffs; default {@link
         * ThreadLocalRandom}. Called from every worker thread, so it must be thread-safe; a test
         * passes a constant one for repeatable delays.
         */
        public Builder random(RandomGenerator random) {
            this.random = Args.configured(random, "random");
            return this;
        }

        /** Whether {@link Relay#close()} closes the routes' publishers; default true. */
        public Builder closePublishers(boolean closePublishers) {
            this.closePublishers = closePublishers;
            return this;
        }

        /**
         * Checks the whole configuration and builds a relay that is not started yet.
         *
         * @throws ConfigException naming the property and value at fault
         */
        public Relay build() {
            Duration publishTimeout = RelayOption.PUBLISH_TIMEOUT.get(this);
            Duration laneLease = RelayOption.LANE_LEASE.get(this);
            Duration initialBackoff = RelayOption.INITIAL_BACKOFF.get(this);
            Duration maxBackoff = RelayOption.MAX_BACKOFF.get(this);
            String relayId = RelayOption.RELAY_ID.get(this);
            if (dataSource == null) {
                throw new ConfigException("dataSource is required");
            }
            if (routes.isEmpty()) {
                throw new ConfigException("at least one route is required");
            }
            if (publishTimeout.compareTo(laneLease) >= 0) {
                throw new ConfigException("publishTimeout (" + publishTimeout + ") must be shorter than laneLease ("
                        + laneLease + "), or a lane could change owner while its batch is still being published");
            }
            if (initialBackoff.compareTo(maxBackoff) > 0) {
                throw new ConfigException("initialBackoff (" + initialBackoff + ") must not exceed maxBackoff (" + maxBackoff + ")");
            }
            String id = relayId != null ? relayId
                    : "relay-" + ManagementFactory.getRuntimeMXBean().getPid() + "-" + UUID.randomUUID().toString().substring(0, 8);
            return new RelaySettings(id, dataSource, tables, Map.copyOf(routes), RelayOption.WORKERS.get(this),
                    RelayOption.BATCH_SIZE.get(this), RelayOption.POLL_INTERVAL.get(this), RelayOption.LISTEN.get(this),
                    publishTimeout, laneLease,
                    RelayOption.MAX_ATTEMPTS.get(this), new Backoff(initialBackoff, maxBackoff),
                    RelayOption.BACKLOG_INTERVAL.get(this), RelayOption.SHUTDOWN_TIMEOUT.get(this), List.copyOf(wakeOn),
                    listener, clock, ticker, random, closePublishers,
                    RelaySettings.destinations(RelayOption.MOVE_ON_DESTINATIONS.get(this))).relay();
        }

        /** Called by {@link RelayOption#set} once the value is checked. */
        Builder set(RelayOption<?> option, Object value) {
            options.put(option, value);
            return this;
        }

        /** What {@link RelayOption#get} reads: the value set, or the option's default. */
        @Nullable Object value(RelayOption<?> option) {
            Object v = options.get(option);
            return v != null ? v : option.defaultValue();
        }
    }
}
