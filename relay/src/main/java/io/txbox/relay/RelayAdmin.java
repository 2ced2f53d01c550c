package io.txbox.relay;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.ByDialect;
import io.txbox.internal.SqlErrors;
import io.txbox.relay.internal.SchemaCheck;
import io.txbox.relay.internal.OperatorStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Operator calls on a relay's tables, for dashboards, scripts and the admin CLI: whether the
 * schema is migrated, the backlog and the relays at work, and the {@link DeadLetters}. Each call
 * is one short read-only transaction (dead-letter changes run in batches, see DeadLetters).
 *
 * <pre>{@code
 * RelayAdmin admin = RelayAdmin.of(dataSource, tables);
 * admin.requireTables();
 * RelayAdmin.Status s = admin.status();
 * System.out.println(s.outboxRows() + " pending, oldest " + s.oldestPendingAge());
 * }</pre>
 */
public final class RelayAdmin {
    private final DataSource dataSource;
    private final TxboxTables tables;
    /** Chosen by the database of the first connection, then kept. */
    private final ByDialect<OperatorStore> store;

    private RelayAdmin(DataSource dataSource, TxboxTables tables) {
        this.dataSource = dataSource;
        this.tables = tables;
        this.store = new ByDialect<>(dialect -> OperatorStore.of(tables, dialect));
    }

    /** Operator calls on the tables in {@code tables}, through {@code dataSource}. */
    public static RelayAdmin of(DataSource dataSource, TxboxTables tables) {
        Args.notNull(dataSource, "dataSource");
        Args.notNull(tables, "tables");
        return new RelayAdmin(dataSource, tables);
    }

    /**
     * What {@link #status()} shows, measured by the database clock.
     *
     * @param outboxRows rows waiting in the outbox
     * @param outboxReady of those, rows whose backoff or delay is over
     * @param oldestPendingAge age of the oldest outbox row, null when the outbox is empty
     * @param outboxDead dead-lettered outbox rows
     * @param oldestDeadAt when the oldest dead letter died, null when there is none
     * @param relayMembers relay workers whose membership lease is live
     * @param ownedLanes lanes with a live owner
     */
    public record Status(long outboxRows, long outboxReady, @Nullable Duration oldestPendingAge, long outboxDead,
            @Nullable Instant oldestDeadAt, long relayMembers, long ownedLanes) {}

    /**
     * Checks that every txbox table exists.
     *
     * @throws TxboxException saying which tables are missing and to run the migrations
     */
    public void requireTables() {
        String problem;
        try (Connection c = dataSource.getConnection()) {
            problem = SchemaCheck.problem(c, tables);
        } catch (SQLException e) {
            throw SqlErrors.translate("checking the txbox tables", e);
        }
        if (problem != null) {
            throw new TxboxException(problem);
        }
    }

    /** The outbox backlog, its dead letters and the relays at work, read in one transaction. */
    public Status status() {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                Status status = store.on(c).status(c);
                c.commit();
                return status;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException | RuntimeException e) {
            throw SqlErrors.translate("reading the relay status", e);
        }
    }

    /** The outbox's dead letters. */
    public DeadLetters deadLetters() {
        return DeadLetters.of(dataSource, tables);
    }
}
