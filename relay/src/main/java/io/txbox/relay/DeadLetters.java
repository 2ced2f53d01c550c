package io.txbox.relay;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.ByDialect;
import io.txbox.internal.Connections;
import io.txbox.internal.SqlErrors;
import io.txbox.relay.internal.OperatorStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Operations on the outbox dead-letter table, for operators and the admin CLI: list, retry
 * (move back to the outbox), purge. Retries and purges run in batches of {@value #BATCH} rows,
 * one short transaction each, so millions of rows never hold locks for long. Cutoffs use the
 * database clock.
 *
 * <pre>{@code
 * DeadLetters dead = DeadLetters.of(dataSource, tables);
 * dead.list(20).forEach(System.out::println);
 * dead.retry(4711);
 * dead.purgeOlderThan(Duration.ofDays(30));
 * }</pre>
 *
 * <p>A retried row keeps its id, so it goes back to its old place in id order (before rows of
 * its routing key sent after it died), with attempts reset to 0 and its original
 * {@code created_at}. A dead row whose step key (or id) is pending in the outbox again is
 * removed rather than duplicated, and counted as {@link RetryResult#alreadyPending()}.
 *
 * <p><b>Parked keys.</b> A row dead-lettered after its attempts (or refused by the broker for
 * good) parks its routing key in its destination, unless the destination moves on ({@link
 * Relay.Builder#moveOnDestinations}): the key's later rows wait in the outbox, in order, until an
 * operator acts. {@link #parkedKeys} lists them with how many rows wait behind each. {@link
 * #retry(long)} or {@link #retryKey} puts the dead row back first, so the key resumes in order
 * (its later rows still wait until that row is published; if it dies again, the key parks
 * again); {@link #skipKey} drops the dead row for good and releases the key, as purging it does.
 * A destination without a route dead-letters all its rows and parks no key; rows without a
 * routing key never park anything.
 *
 * <pre>{@code
 * for (DeadLetters.ParkedKey k : dead.parkedKeys(20)) {
 *     System.out.println(k.destination() + " " + k.routingKey() + ": " + k.waiting() + " rows wait");
 * }
 * dead.retryKey("orders", "customer-42");
 * dead.skipKey("orders", "customer-7");
 * }</pre>
 */
public final class DeadLetters {
    /** Rows per retry or purge transaction: {@value}. */
    public static final int BATCH = 1000;

    private final DataSource dataSource;
    /** Chosen by the database of the first connection, then kept. */
    private final ByDialect<OperatorStore> store;

    private DeadLetters(DataSource dataSource, TxboxTables tables) {
        this.dataSource = dataSource;
        this.store = new ByDialect<>(dialect -> OperatorStore.of(tables, dialect));
    }

    /** Dead letters of the outbox in {@code tables}, read and changed through {@code dataSource}. */
    public static DeadLetters of(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        return new DeadLetters(dataSource, tables);
    }

    /**
     * One dead-lettered row.
     *
     * @param reason why it was dead-lettered (the last error, or "no route ...")
     * @param payload the payload, only when asked for
     */
    public record DeadLetter(long id, String stepKey, String destination, @Nullable String routingKey, int attempts,
            String reason, Instant createdAt, Instant deadAt, byte @Nullable [] payload) {
        public DeadLetter {
            Args.notNull(stepKey, "stepKey");
            Args.notNull(destination, "destination");
            Args.notNull(reason, "reason");
            Args.notNull(createdAt, "createdAt");
            Args.notNull(deadAt, "deadAt");
        }

        @Override
        public String toString() {
            return "DeadLetter[" + id + " " + stepKey + " -> " + destination + ", " + attempts + " attempts, " + reason + "]";
        }
    }

    /**
     * What a retry did.
     *
     * @param requeued rows moved back into the outbox
     * @param alreadyPending dead rows removed because their step key was pending in the outbox again
     */
    public record RetryResult(int requeued, int alreadyPending) {
        /** Dead rows the retry took: requeued plus already pending. */
        public int total() {
            return requeued + alreadyPending;
        }
    }

    /**
     * A routing key parked in its destination at a dead letter.
     *
     * @param deadId the dead letter's id: {@link #retry(long)} resumes the key with it
     * @param parkedAt when the key was parked (database time)
     * @param age how long it has been parked, by the database clock
     * @param waiting rows of the key waiting in the outbox behind the dead one
     */
    public record ParkedKey(String destination, String routingKey, long deadId, Instant parkedAt, Duration age,
            long waiting) {
        public ParkedKey {
            Args.notNull(destination, "destination");
            Args.notNull(routingKey, "routingKey");
            Args.notNull(parkedAt, "parkedAt");
            Args.notNull(age, "age");
        }
    }

    /**
     * How many keys are parked and how long the longest-parked one has been.
     *
     * @param oldestAge null when no key is parked
     */
    public record Parked(long keys, @Nullable Duration oldestAge) {}

    /**
     * The {@code limit} longest-parked keys, longest first. Counting the rows waiting behind a key
     * reads its lane's rows of the outbox, so a listing of a large backlog costs a scan per key.
     */
    public List<ParkedKey> parkedKeys(int limit) {
        if (limit < 1) {
            throw new ConfigException("limit must be at least 1, but was " + limit);
        }
        return read("listing parked keys", c -> store.on(c).parkedKeys().list(c, limit));
    }

    /** How many keys are parked, and the age of the longest-parked one. */
    public Parked parked() {
        return read("counting parked keys", c -> store.on(c).parkedKeys().summary(c));
    }

    /**
     * Resumes a parked key: moves its dead row back to the outbox first, so the key's rows are
     * published in order from it. {@link RetryResult#total()} is 0 when the key is not parked.
     */
    public RetryResult retryKey(String destination, String routingKey) {
        checkKey(destination, routingKey);
        OperatorStore.Moved m = transaction("retrying parked key " + routingKey, c -> {
            OperatorStore s = store.on(c);
            Long id = s.parkedKeys().find(c, destination, routingKey);
            return id == null ? new OperatorStore.Moved(0, 0, 0) : s.retryDead(c, id);
        });
        return new RetryResult(m.requeued(), m.taken() - m.requeued());
    }

    /**
     * Releases a parked key: deletes its dead row for good, and the key's waiting rows go on.
     * Returns false when the key is not parked.
     */
    public boolean skipKey(String destination, String routingKey) {
        checkKey(destination, routingKey);
        return transaction("skipping parked key " + routingKey, c -> {
            OperatorStore s = store.on(c);
            Long id = s.parkedKeys().find(c, destination, routingKey);
            return id != null && s.parkedKeys().skip(c, id);
        });
    }

    private static void checkKey(String destination, String routingKey) {
        if (destination == null || destination.isBlank()) {
            throw new ConfigException("destination must name the parked key's destination, but was "
                    + (destination == null ? "null" : "\"" + destination + "\""));
        }
        if (routingKey == null) {
            throw new ConfigException("routingKey must not be null: rows without a routing key never park");
        }
    }

    /** The newest {@code limit} dead letters, newest first, without payloads. */
    public List<DeadLetter> list(int limit) {
        return list(limit, null, false);
    }

    /** The newest {@code limit} dead letters of {@code destination} (all when null), newest first. */
    public List<DeadLetter> list(int limit, @Nullable String destination, boolean withPayload) {
        if (limit < 1) {
            throw new ConfigException("limit must be at least 1, but was " + limit);
        }
        try (Connection c = dataSource.getConnection()) {
            return store.on(c).listDead(c, limit, destination, withPayload);
        } catch (SQLException e) {
            throw SqlErrors.translate("listing dead letters", e);
        }
    }

    /** Moves dead letter {@code id} back to the outbox; {@link RetryResult#total()} is 0 if there is none. */
    public RetryResult retry(long id) {
        OperatorStore.Moved m = transaction("retrying dead letter " + id, c -> store.on(c).retryDead(c, id));
        return new RetryResult(m.requeued(), m.taken() - m.requeued());
    }

    /** Moves every dead letter back to the outbox. */
    public RetryResult retryAll() {
        return retryAll(null);
    }

    /** Moves every dead letter of {@code destination} (all when null) back to the outbox, in batches. */
    public RetryResult retryAll(@Nullable String destination) {
        int requeued = 0;
        int pending = 0;
        long after = 0;
        while (true) {
            long from = after;
            OperatorStore.Moved m = transaction("retrying dead letters", c -> store.on(c).retryDeadAfter(c, from, destination));
            requeued += m.requeued();
            pending += m.taken() - m.requeued();
            after = Math.max(after, m.lastId());
            if (m.taken() < BATCH) {
                return new RetryResult(requeued, pending);
            }
        }
    }

    /** Deletes dead letters that died more than {@code age} ago, in batches; returns how many. */
    public long purgeOlderThan(Duration age) {
        checkAge(age);
        long total = 0;
        while (true) {
            int n = transaction("purging dead letters", c -> store.on(c).purgeDead(c, age.toMillis()));
            total += n;
            if (n < BATCH) {
                return total;
            }
        }
    }

    /** How many dead letters {@link #purgeOlderThan(Duration)} would delete now. */
    public long countOlderThan(Duration age) {
        checkAge(age);
        return read("counting old dead letters", c -> store.on(c).countDeadOlder(c, age.toMillis()));
    }

    /** Number of dead letters. */
    public long count() {
        return read("counting dead letters", c -> store.on(c).countDead(c));
    }

    private static void checkAge(Duration age) {
        if (age == null || age.isNegative()) {
            throw new ConfigException("age must be zero or positive, but was " + age);
        }
    }

    private interface Call<T> {
        T on(Connection c) throws SQLException;
    }

    /** Runs {@code call} in one transaction on a connection of its own, committed at once (a batch per call). */
    private <T> T transaction(String what, Call<T> call) {
        try (Connection c = dataSource.getConnection()) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                T result = call.on(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                Connections.rollbackQuietly(c);
                throw e;
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }

    private <T> T read(String what, Call<T> call) {
        try (Connection c = dataSource.getConnection()) {
            return call.on(c);
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }
}
