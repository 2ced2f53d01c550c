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
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * statement_timeout and lock_timeout firing, in the handler and in the inbox's own statement. A
 * timeout never leaves an effect; a handler timeout is a counted attempt, an inbox timeout a
 * retryable error that records nothing; the next delivery applies the message once.
 */
class TimeoutsIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(10);

    static TxboxTables tables;
    static Effects effects;

    @BeforeAll
    static void setUp() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        effects = new Effects(PG.dataSource());
        effects.exec("CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)");
        effects.exec("INSERT INTO accounts VALUES (1, 100)");
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of(key, key.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void process_statementTimeoutInHandler_attemptCountedWithoutEffect_retryAppliesOnce() {
        String name = "stmt-timeout-handler";
        String key = "t-1";
        AtomicInteger runs = new AtomicInteger();
        Handler handler = (tx, m) -> {
            Effects.apply(tx, name, m.key());
            if (runs.incrementAndGet() == 1) {
                try (Statement s = tx.createStatement()) {
                    s.execute("SET LOCAL statement_timeout = '50ms'");
                    s.execute("SELECT pg_sleep(5)");
                }
            }
            return null;
        };
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        long start = System.nanoTime();
        Outcome first = inbox.process(PG.dataSource(), message(key), handler);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(4));
        assertThat(first.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(first.attempts()).isEqualTo(1);
        assertThat(first.reason()).contains("statement timeout");
        assertThat(effects.count(name, key)).isZero();

        Outcome second = inbox.process(PG.dataSource(), message(key), handler);
        assertThat(second.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(second.attempts()).isEqualTo(2);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }

    @Test
    void process_lockTimeoutInHandlerOnBusinessRow_attemptCountedWithoutEffect_retryAppliesOnce() throws Exception {
        String name = "lock-timeout-handler";
        String key = "t-2";
        Handler handler = (tx, m) -> {
            Effects.apply(tx, name, m.key());
            try (Statement s = tx.createStatement()) {
                s.execute("SET LOCAL lock_timeout = '100ms'");
                s.execute("UPDATE accounts SET balance = balance - 1 WHERE id = 1");
            }
            return null;
        };
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        try (Connection holder = PG.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            try (Statement s = holder.createStatement()) {
                s.execute("SELECT * FROM accounts WHERE id = 1 FOR UPDATE");
            }
            Outcome first = inbox.process(PG.dataSource(), message(key), handler);
            assertThat(first.status()).isEqualTo(Outcome.Status.FAILED);
            assertThat(first.reason()).contains("lock timeout");
            assertThat(effects.count(name, key)).isZero();
            holder.rollback();
        }
        assertThat(inbox.process(PG.dataSource(), message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(effects.count(name, key)).isEqualTo(1);
        assertThat(effects.queryLong("SELECT balance FROM accounts WHERE id = 1")).isEqualTo(99);
    }

    @Test
    void process_lockTimeoutWhileConcurrentDeliveryHoldsKey_retryableNothingRecorded_retryAppliesOnce() throws Exception {
        timeoutWhileKeyHeld("lock-timeout-key", "SET lock_timeout = '150ms'", "55P03");
    }

    @Test
    void process_statementTimeoutWhileConcurrentDeliveryHoldsKey_retryableNothingRecorded_retryAppliesOnce()
            throws Exception {
        timeoutWhileKeyHeld("stmt-timeout-key", "SET statement_timeout = '150ms'", "57014");
    }

    /**
     * A first delivery holds the key in an open transaction; a concurrent duplicate, on a pool
     * whose connections carry {@code setting}, waits on the key until the timeout fires.
     */
    private void timeoutWhileKeyHeld(String name, String setting, String sqlState) throws Exception {
        String key = name + "-k";
        Inbox inbox = Inbox.builder(name).tables(tables).build();
        AtomicInteger runs = new AtomicInteger();
        Handler handler = (tx, m) -> {
            runs.incrementAndGet();
            Effects.apply(tx, name, m.key());
            return null;
        };
        try (HikariDataSource timed = Pools.pool(PG.jdbcUrl(), PG.user(), name, 2, Duration.ofSeconds(5), setting)) {
            try (Connection first = PG.dataSource().getConnection()) {
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
            assertThat(effects.queryLong("SELECT count(*) FROM " + tables.qualified(tables.inboxTable())
                    + " WHERE consumer = '" + name + "'")).isZero();

            assertThat(inbox.process(timed, message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(inbox.process(timed, message(key), handler).status()).isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(runs).hasValue(1);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }
}
