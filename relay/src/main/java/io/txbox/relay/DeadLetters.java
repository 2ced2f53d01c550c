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
