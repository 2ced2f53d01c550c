package io.txbox.inbox;

import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.MissingTables;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Operator calls on the whole inbox table, across consumers, for scripts and the admin CLI.
 * Deleting goes through each consumer's own {@link Inbox#purgeCompleted}, so an operator's
 * purge is the library's purge: the same rows (a consumer's tenant entries, stored as
 * {@code consumer@tenant}, included), the same bounded batches, and the same clock (this
 * JVM's, see {@link #of(DataSource, TxboxTables, Clock)}).
 *
 * <pre>{@code
 * InboxMaintenance inboxes = InboxMaintenance.of(dataSource, tables);
 * long wouldGo = inboxes.countCompleted(Duration.ofDays(30), null);
 * long gone = inboxes.purgeCompleted(Duration.ofDays(30), null);   // every consumer
 * }</pre>
 */
public final class InboxMaintenance {
    private final DataSource dataSource;
    private final TxboxTables tables;
    private final Clock clock;
    /** The table's statements; reads only here, deletes go through each consumer's inbox. */
    private final InboxStore store;
    private final io.txbox.internal.ByDialect<ParkedStore> parked;

    private InboxMaintenance(DataSource dataSource, TxboxTables tables, Clock clock) {
        this.dataSource = dataSource;
        this.tables = tables;
        this.clock = clock;
        this.store = InboxStore.of(tables, Inbox.DEFAULT_MAX_ATTEMPTS, 1, InboxCore.PURGE_BATCH,
                "inbox maintenance");
        this.parked = new io.txbox.internal.ByDialect<>(d -> new ParkedStore(tables, d));
    }

    /** Operator calls on the inbox table in {@code tables}, cutoffs by the system UTC clock. */
    public static InboxMaintenance of(DataSource dataSource, TxboxTables tables) {
        return of(dataSource, tables, Clock.systemUTC());
    }

    /** Operator calls on the inbox table in {@code tables}, cutoffs by {@code clock}. */
    public static InboxMaintenance of(DataSource dataSource, TxboxTables tables, Clock clock) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        Args.notNull(clock, "clock");
        return new InboxMaintenance(dataSource, tables, clock);
    }

    /**
     * The COMPLETED entries that {@link #purgeCompleted} would delete now: completed more than
     * {@code olderThan} ago, of {@code consumer} (with its tenants) or of every consumer when null.
     *
     * @throws io.txbox.ConfigException if {@code olderThan} is under 1 second or {@code consumer}
     *     is not a valid consumer name
     */
    public long countCompleted(Duration olderThan, @Nullable String consumer) {
        check(olderThan, consumer);
        return purgeable(clock.instant().minus(olderThan), consumer).values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * Deletes the COMPLETED entries completed more than {@code olderThan} ago, of {@code consumer}
     * (with its tenants) or of every consumer when null, through each consumer's
     * {@link Inbox#purgeCompleted}: bounded batches, locked rows skipped. DEAD, FAILED and
     * in-flight entries are kept. A redelivery of a purged key runs again, so choose
     * {@code olderThan} longer than any redelivery you expect.
     *
     * @return the number of entries deleted
     * @throws io.txbox.ConfigException if {@code olderThan} is under 1 second or {@code consumer}
     *     is not a valid consumer name
     */
    public long purgeCompleted(Duration olderThan, @Nullable String consumer) {
        check(olderThan, consumer);
        Instant now = clock.instant();
        Clock fixed = Clock.fixed(now, ZoneOffset.UTC);
        long total = 0;
        for (String name : purgeable(now.minus(olderThan), consumer).keySet()) {
            total += Inbox.builder(name).tables(tables).retention(olderThan).clock(fixed).build()
                    .purgeCompleted(dataSource);
        }
        return total;
    }

    /** DEAD entries of every consumer. */
    public long countDead() {
        try (Connection c = dataSource.getConnection()) {
            return store.countDead(c);
        } catch (SQLException e) {
            throw MissingTables.translate("counting DEAD inbox entries", e, tables);
        }
    }

    /**
     * Up to {@code limit} (1 to {@value ParkedKeys#MAX_LIMIT}) parked ordering keys, oldest first,
     * of {@code consumer} or of every consumer when null: each with its dead message, its last
     * error, how many messages wait and since when. See {@link ParkedKeys}.
     */
    public java.util.List<ParkedKey> listParked(@Nullable String consumer, int limit) {
        if (consumer != null) {
            Inbox.builder(consumer);
        }
        if (limit < 1 || limit > ParkedKeys.MAX_LIMIT) {
            throw new io.txbox.InvalidInputException("limit must be between 1 and " + ParkedKeys.MAX_LIMIT
                    + ", but was " + limit);
        }
        try (Connection c = dataSource.getConnection()) {
            return parked.on(c).list(c, consumer, limit);
        } catch (SQLException e) {
            throw MissingTables.translate("listing parked inbox keys", e, tables);
        }
    }

    /**
     * Asks {@code consumer}'s running instances to retry or skip a parked ordering key; they
     * carry it out through their handler within their {@code parkedPollInterval}
     * ({@link ParkedKeys#resolveRequested}). Apps with the handler at hand call
     * {@link ParkedKeys#retry} or {@link ParkedKeys#skip} instead.
     *
     * @return {@code false} if the key is not parked
     */
    public boolean requestParked(String consumer, String orderingKey, ParkedKey.Action action) {
        Args.notNull(consumer, "consumer");
        return Inbox.builder(consumer).tables(tables).build().parkedKeys(dataSource).request(orderingKey, action);
    }

    /** {@code olderThan} and {@code consumer} by the inbox builder's own rules (retention, consumer name). */
    private static void check(Duration olderThan, @Nullable String consumer) {
        Args.notNull(olderThan, "olderThan");
        Inbox.builder(consumer == null ? "any" : consumer).retention(olderThan);
    }

    /** Purgeable entries per consumer, tenants folded into their consumer. */
    private Map<String, Long> purgeable(Instant cutoff, @Nullable String consumer) {
        Map<String, Long> counts = new TreeMap<>();
        try (Connection c = dataSource.getConnection()) {
            store.completedByConsumer(c, OffsetDateTime.ofInstant(cutoff, ZoneOffset.UTC)).forEach((column, n) -> {
                int at = column.indexOf('@');
                String name = at < 0 ? column : column.substring(0, at);
                if (consumer == null || consumer.equals(name)) {
                    counts.merge(name, n, Long::sum);
                }
            });
        } catch (SQLException e) {
            throw MissingTables.translate("counting completed inbox entries", e, tables);
        }
        return counts;
    }
}
