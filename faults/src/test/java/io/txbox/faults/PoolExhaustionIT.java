package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.RetryableException;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** An exhausted pool fails fast with a retryable error, runs nothing, and recovers once a connection is free. */
class PoolExhaustionIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inbox_poolExhausted_failsFastWithRetryableErrorAndRunsNothing(TestDatabase db) throws Exception {
        TxboxTables tables = TxboxTables.inSchema(db.schema());
        TxboxMigrations.migrate(db.dataSource(), tables);
        Effects effects = new Effects(db.dataSource());
        String name = "pool-exhausted";
        InboundMessage message = InboundMessage.of("p-1", "x".getBytes(StandardCharsets.UTF_8));
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        AtomicInteger runs = new AtomicInteger();
        try (HikariDataSource ds = Pools.pool(db, name, 2, CONNECTION_TIMEOUT, null)) {
            try (Connection a = ds.getConnection(); Connection b = ds.getConnection()) {
                failsFast(() -> inbox.process(ds, message, (tx, m) -> {
                    runs.incrementAndGet();
                    return null;
                }));
                failsFast(() -> inbox.claim(ds, message));
                failsFast(() -> inbox.recordFailure(ds, message, new IllegalStateException("boom")));
                failsFast(() -> inbox.listDead(ds, 10));
            }
            assertThat(runs).hasValue(0);
            assertThat(effects.queryLong("SELECT count(*) FROM " + db.qualified(db.schema(), tables.inboxTable()))).isZero();

            Outcome after = inbox.process(ds, message, (tx, m) -> {
                runs.incrementAndGet();
                Effects.apply(tx, name, m.key());
                return null;
            });
            assertThat(after.status()).isEqualTo(Outcome.Status.PROCESSED);
        }
        assertThat(runs).hasValue(1);
        assertThat(effects.count(name, "p-1")).isEqualTo(1);
    }

    /** The pool's wait for a free connection; the fault is that none comes within it. */
    private static final Duration CONNECTION_TIMEOUT = Duration.ofMillis(250);

    /**
     * The call waited for the pool (at least its connection timeout), gave up with a retryable
     * error caused by the pool's timeout, and did not wait for anything else: the bound is far
     * below a lock or statement wait yet wide enough for a loaded 2-core machine.
     */
    private static void failsFast(ThrowingCallable call) {
        long start = System.nanoTime();
        RetryableException e = catchThrowableOfType(RetryableException.class, call);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(e).as("a RetryableException").isNotNull();
        assertThat(e).hasRootCauseInstanceOf(SQLTransientConnectionException.class);
        assertThat(took).isGreaterThanOrEqualTo(CONNECTION_TIMEOUT).isLessThan(Duration.ofSeconds(10));
    }
}
