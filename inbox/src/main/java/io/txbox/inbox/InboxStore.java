package io.txbox.inbox;

import io.txbox.TxboxTables;
import io.txbox.internal.ByDialect;
import io.txbox.internal.Dialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The inbox table of one database vendor: every statement of the inbox lives behind this
 * interface, so that nothing else in the inbox renders or runs SQL. Implementations render
 * their statements once, when the inbox is built, and only bind them per call; they run on the
 * connection they are given and never commit, roll back or close it.
 *
 * <p>The three calls that write an entry that may already exist ({@link #receive},
 * {@link #recordFailure}, {@link #claim}) share one path: insert, or take the entry over where
 * it may be taken over (FAILED, or PROCESSING with an expired lease), and otherwise read the
 * entry that blocked the write and classify it for the caller's {@link Answers}. That path,
 * its fingerprint check and its bounded retry on a racing change are written once, in
 * {@link #classify}.
 */
interface InboxStore {
    String PROCESSING = "PROCESSING";
    String COMPLETED = "COMPLETED";
    String FAILED = "FAILED";
    String DEAD = "DEAD";

    /**
     * The store for {@code tables} on the database of the first connection it is given (see
     * {@link DialectInboxStore}); {@code what} names the inbox in messages.
     */
    static InboxStore of(TxboxTables tables, int maxAttempts, long leaseMicros, int purgeBatchSize, String what) {
        return new DialectInboxStore(new ByDialect<>(d -> of(d, tables, maxAttempts, leaseMicros, purgeBatchSize,
                what)), purgeBatchSize);
    }

    /** The store for {@code tables} on {@code dialect}'s database. */
    static InboxStore of(Dialect dialect, TxboxTables tables, int maxAttempts, long leaseMicros, int purgeBatchSize,
            String what) {
        return dialect.isMysqlFamily()
                ? new MariaDbInboxStore(tables, dialect, maxAttempts, leaseMicros, purgeBatchSize, what)
                : new PostgresInboxStore(tables, maxAttempts, leaseMicros, purgeBatchSize, what);
    }

    /** How often an entry may change under us between a write that conflicted and the read after it. */
    int MAX_RACE_LOOPS = 5;

    /** What a write that inserted or took over an entry left in it. */
    record Written(String status, int attempts, int failures, @Nullable Instant leaseUntil,
            @Nullable String lastError) {
        boolean dead() {
            return DEAD.equals(status);
        }
    }

    /** One entry, as the read after a conflicting write sees it. */
    record Entry(String status, byte @Nullable [] fingerprint, byte @Nullable [] result,
            @Nullable Integer resultStatus, String @Nullable [] headerNames, String @Nullable [] headerValues,
            int attempts, @Nullable String lastError, boolean leased) {

        Map<String, List<String>> headers() {
            if (headerNames == null || headerValues == null) {
                return Map.of();
            }
            Map<String, List<String>> headers = new LinkedHashMap<>();
            for (int i = 0; i < headerNames.length && i < headerValues.length; i++) {
                headers.computeIfAbsent(headerNames[i], n -> new ArrayList<>()).add(headerValues[i]);
            }
            headers.replaceAll((n, vs) -> List.copyOf(vs));
            return Collections.unmodifiableMap(headers);
        }

        /** A missing fingerprint on either side ({@link Fingerprint#none()}) matches anything. */
        boolean sameFingerprint(byte @Nullable [] fp) {
            return fingerprint == null || fp == null || java.util.Arrays.equals(fingerprint, fp);
        }
    }

    /** What a caller makes of each way a write that may meet an existing entry can end. */
    interface Answers<T> {
        /** The write inserted the entry or took it over. */
        T written(Written w);

        /** The entry was seen with another payload fingerprint; nothing was written. */
        T keyReused(Entry e);

        T completed(Entry e);

        T dead(Entry e);

        /** Another delivery holds a live lease on the entry. */
        T inFlight(Entry e);
    }

    /**
     * Atomic mode: records the key as COMPLETED in the caller's transaction (FIRST), counting an
     * attempt, unless the entry exists and may not be taken over.
     */
    <T> T receive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException;

    /**
     * {@link #receive} for each of {@code scopes} in order ({@code fps} and {@code answers}
     * index alike), with the answers each of those calls would give: by default one call after
     * the other; a store whose database takes many entries in one statement overrides this. An
     * exception (a reused key's included) may come after later entries were written: the caller
     * rolls the transaction back.
     */
    default <T> List<T> receiveAll(Connection tx, List<Scope> scopes, List<byte @Nullable []> fps,
            List<Answers<T>> answers) throws SQLException {
        List<T> out = new ArrayList<>(scopes.size());
        for (int i = 0; i < scopes.size(); i++) {
            out.add(receive(tx, scopes.get(i), fps.get(i), answers.get(i)));
        }
        return out;
    }

    /**
     * Commits {@code tx}'s transaction, then runs {@link #receive} in the next one: by default in
     * two round trips; a store whose database takes both in one overrides this. A failure known
     * to have come after the commit throws {@link AfterCommit} around its cause; any other
     * failure leaves the commit unknown, so the caller must take it as not committed.
     */
    default <T> T commitAndReceive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers)
            throws SQLException {
        tx.commit();
        try {
            return receive(tx, s, fp, answers);
        } catch (SQLException | RuntimeException e) {
            throw new AfterCommit(e);
        }
    }

    /** {@link #commitAndReceive} failed after its commit went through; the cause says how. */
    final class AfterCommit extends SQLException {
        private static final long serialVersionUID = 1L;

        AfterCommit(Exception cause) {
            super("committed, then the receive failed: " + cause, cause instanceof SQLException e ? e.getSQLState()
                    : null, cause);
        }
    }

    /** Stores {@code result} for an entry this transaction's receive reported FIRST; the rows changed (0 or 1). */
    int storeResult(Connection tx, Scope s, byte[] result) throws SQLException;

    /** Counts a failure: FAILED, or DEAD at {@code maxAttempts} failures. */
    <T> T recordFailure(Connection c, Scope s, byte @Nullable [] fp, String error, Answers<T> answers)
            throws SQLException;

    /** Two-phase claim: PROCESSING with a lease in database time, or DEAD when a takeover used up the attempts. */
    <T> T claim(Connection c, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException;

    /** Completes a claim still held with its fencing token; {@code false} if it was taken over. */
    boolean complete(Connection c, Scope s, Claim claim, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers) throws SQLException;

    /** Fails a claim still held with its fencing token; {@code null} if it was taken over. */
    @Nullable Written fail(Connection c, Scope s, Claim claim, String error) throws SQLException;

    /** Releases a claim still held with its fencing token; {@code false} if it was taken over. */
    boolean release(Connection c, Scope s, Claim claim) throws SQLException;

    /** Makes a DEAD entry FAILED with fresh counts; {@code false} if it was not DEAD. */
    boolean resetDead(Connection c, Scope s) throws SQLException;

    /** Up to {@code limit} DEAD entries of the consumer, all tenants, oldest first. */
    List<DeadEntry> listDead(Connection c, String consumer, int limit) throws SQLException;

    /** Deletes one batch of the consumer's entries completed before {@code cutoff}; the rows deleted. */
    int purgeBatch(Connection c, String consumer, OffsetDateTime cutoff) throws SQLException;

    /** COMPLETED entries of every consumer completed before {@code cutoff}, per consumer column (tenants apart). */
    Map<String, Long> completedByConsumer(Connection c, OffsetDateTime cutoff) throws SQLException;

    /** DEAD entries of every consumer. */
    long countDead(Connection c) throws SQLException;

    /** Rows per {@link #purgeBatch}: a batch smaller than this was the last one. */
    int purgeBatchSize();

    /**
     * Whether {@link #recordFailure} writes the entry and reports it in one statement on
     * {@code c}'s database, so it is atomic on a connection in auto-commit mode. Where it takes a
     * write and then a read (MariaDB and MySQL), a transaction of the inbox's own holds the two
     * together, so a concurrent write between them cannot change what is reported and a retry
     * never repeats a committed write.
     */
    default boolean writesInOneStatement(Connection c) throws SQLException {
        return true;
    }

    /** Writes once more, or reads what blocked the write: one attempt of {@link #classify}. */
    @FunctionalInterface
    interface Attempt {
        /** The write's result, or {@code null} if it met an entry it may not take over. */
        @Nullable Written write() throws SQLException;
    }

    /** Reads an entry after a conflicting write. */
    @FunctionalInterface
    interface Reader {
        @Nullable Entry read() throws SQLException;
    }

    /**
     * The one "insert, else read and classify" path: runs {@code attempt}; if it met an entry
     * it may not take over, reads that entry (the write holds its lock now, so the read sees what
     * blocked it) and hands it to {@code answers}. An entry that changed in between (deleted, or
     * taken over and released) is tried again, at most {@link #MAX_RACE_LOOPS} times.
     *
     * @throws io.txbox.RetryableException if the entry kept changing
     */
    static <T> T classify(Scope s, byte @Nullable [] fp, Attempt attempt, Reader reader, Answers<T> answers,
            String what) throws SQLException {
        for (int i = 0; ; i++) {
            Written w = attempt.write();
            if (w != null) {
                return answers.written(w);
            }
            Entry e = reader.read();
            if (e != null) {
                if (!e.sameFingerprint(fp)) {
                    return answers.keyReused(e);
                }
                switch (e.status()) {
                    case COMPLETED:
                        return answers.completed(e);
                    case DEAD:
                        return answers.dead(e);
                    case PROCESSING:
                        if (e.leased()) {
                            return answers.inFlight(e);
                        }
                        break;
                    default:
                        break;
                }
            }
            if (i + 1 >= MAX_RACE_LOOPS) {
                throw new io.txbox.RetryableException(what + " kept changing under concurrent deliveries; try again",
                        null);
            }
        }
    }
}
