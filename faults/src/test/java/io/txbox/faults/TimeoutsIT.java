package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.RetryableException;
import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.Receipt;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * Statement and lock timeouts firing, in the handler and in the inbox's own statement. A
 * timeout never leaves an effect; a handler timeout is a counted attempt, an inbox timeout a
 * retryable error that records nothing; the next delivery applies the message once.
 */
class TimeoutsIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    /** The migrated tables of {@code db}, with the effects table and one business row, set up once. */
    private static TxboxTables tables(TestDatabase db) {
        return Effects.migrated(db, effects -> {
            effects.exec("CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)");
            effects.exec("INSERT INTO accounts VALUES (1, 100)");
        });
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of(key, key.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_statementTimeoutInHandler_attemptCountedWithoutEffect_retryAppliesOnce(TestDatabase db) {
        TxboxTables tables = tables(db);
        Effects effects = new Effects(db.dataSource());
        FaultSql sql = FaultSql.of(db);
        String name = "stmt-timeout-handler";
        String key = "t-1";
        AtomicInteger runs = new AtomicInteger();
        Handler handler = (tx, m) -> {
            Effects.apply(tx, name, m.key());
            if (runs.incrementAndGet() == 1) {
                sql.executeWithStatementTimeout(tx, Duration.ofMillis(50), sql.sleep(5, "handler"));
            }
            return null;
        };
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        long start = System.nanoTime();
        Outcome first = inbox.process(db.dataSource(), message(key), handler);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(4));
        assertThat(first.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(first.attempts()).isEqualTo(1);
        assertThat(first.reason()).contains(sql.statementTimeoutMessage());
        assertThat(effects.count(name, key)).isZero();

        Outcome second = inbox.process(db.dataSource(), message(key), handler);
        assertThat(second.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(second.attempts()).isEqualTo(2);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_lockTimeoutInHandlerOnBusinessRow_attemptCountedWithoutEffect_retryAppliesOnce(TestDatabase db)
            throws Exception {
        TxboxTables tables = tables(db);
        Effects effects = new Effects(db.dataSource());
        FaultSql sql = FaultSql.of(db);
        String name = "lock-timeout-handler";
        String key = "t-2";
        Handler handler = (tx, m) -> {
            Effects.apply(tx, name, m.key());
            sql.executeWithLockTimeout(tx, Duration.ofMillis(100), "UPDATE accounts SET balance = balance - 1 WHERE id = 1");
            return null;
        };
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        try (Connection holder = db.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            try (Statement s = holder.createStatement()) {
                s.execute("SELECT * FROM accounts WHERE id = 1 FOR UPDATE");
            }
            Outcome first = inbox.process(db.dataSource(), message(key), handler);
            assertThat(first.status()).isEqualTo(Outcome.Status.FAILED);
            assertThat(first.reason()).contains(sql.lockTimeoutMessage());
            assertThat(effects.count(name, key)).isZero();
            holder.rollback();
        }
        assertThat(inbox.process(db.dataSource(), message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(effects.count(name, key)).isEqualTo(1);
        assertThat(effects.queryLong("SELECT balance FROM accounts WHERE id = 1")).isEqualTo(99);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_lockTimeoutWhileConcurrentDeliveryHoldsKey_retryableNothingRecorded_retryAppliesOnce(TestDatabase db)
            throws Exception {
        FaultSql sql = FaultSql.of(db);
        timeoutWhileKeyHeld(db, "lock-timeout-key", sql.sessionLockTimeout(Duration.ofMillis(150)), sql.lockTimeoutState());
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_statementTimeoutWhileConcurrentDeliveryHoldsKey_retryableNothingRecorded_retryAppliesOnce(
            TestDatabase db) throws Exception {
        FaultSql sql = FaultSql.of(db);
        timeoutWhileKeyHeld(db, "stmt-timeout-key", sql.sessionStatementTimeout(Duration.ofMillis(150)),
                sql.statementTimeoutState());
    }

    /**
     * A first delivery holds the key in an open transaction; a concurrent duplicate, on a pool
     * whose connections carry {@code setting}, waits on the key until the timeout fires.
     */
    private void timeoutWhileKeyHeld(TestDatabase db, String name, String setting, String sqlState) throws Exception {
        TxboxTables tables = tables(db);
        Effects effects = new Effects(db.dataSource());
        String key = name + "-k";
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        AtomicInteger runs = new AtomicInteger();
        Handler handler = (tx, m) -> {
            runs.incrementAndGet();
            Effects.apply(tx, name, m.key());
            return null;
        };
        try (HikariDataSource timed = Pools.pool(db, name, 2, Duration.ofSeconds(5), setting)) {
            try (Connection first = db.dataSource().getConnection()) {
                first.setAutoCommit(false);
                assertThat(inbox.receive(first, message(key)).status()).isEqualTo(Receipt.Status.FIRST);
                long start = System.nanoTime();
                RetryableException e = catchThrowableOfType(RetryableException.class,
                        () -> inbox.process(timed, message(key), handler));
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
                assertThat(e).isNotNull();
                assertThat(e.sqlState()).isEqualTo(sqlState);
                assertThat(e.getMessage()).contains(key);
                first.rollback(); // the first delivery crashed
            }
            assertThat(runs).hasValue(0);
            assertThat(effects.count(name, key)).isZero();
            assertThat(effects.queryLong("SELECT count(*) FROM " + db.qualified(db.schema(), tables.inboxTable())
                    + " WHERE consumer = '" + name + "'")).isZero();

            assertThat(inbox.process(timed, message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(inbox.process(timed, message(key), handler).status()).isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(runs).hasValue(1);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }
}
