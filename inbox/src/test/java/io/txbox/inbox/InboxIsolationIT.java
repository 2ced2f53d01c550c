package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.RetryableException;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A concurrent duplicate at each isolation level: READ COMMITTED answers DUPLICATE; REPEATABLE
 * READ and SERIALIZABLE answer with a retryable error, never FIRST.
 */
class InboxIsolationIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(12);

    static TxboxTables tables;
    static Inbox inbox;
    static Rows rows;

    @BeforeAll
    static void migrate() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        inbox = Inbox.builder("isolation").tables(tables).build();
        rows = new Rows(PG.dataSource(), tables);
        rows.execute("create table " + PG.schema() + ".business (message_key text not null)");
    }

    private static Connection begin(int isolation) throws SQLException {
        Connection c = PG.connection();
        c.setTransactionIsolation(isolation);
        c.setAutoCommit(false);
        return c;
    }

    private static int pid(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** Waits until the backend {@code pid} is blocked on a lock, i.e. on the other delivery's entry. */
    private static void awaitBlocked(int pid) {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() ->
                "Lock".equals(rows.string("select wait_event_type from pg_stat_activity where pid = "
                        + pid)));
    }

    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ,
            Connection.TRANSACTION_SERIALIZABLE})
    void receive_concurrentDuplicateAfterFirstCommits_isDuplicateOrRetryableNeverFirst(int isolation)
            throws Exception {
        InboundMessage m = InboundMessage.of("race-" + isolation, new byte[] {1});
        try (Connection first = begin(isolation); Connection second = PG.connection()) {
            int secondPid = pid(second); // before its transaction, so no snapshot is taken yet
            second.setTransactionIsolation(isolation);
            second.setAutoCommit(false);
            assertThat(inbox.receive(first, m).isFirst()).isTrue();

            CompletableFuture<Receipt> waiting = CompletableFuture.supplyAsync(() -> inbox.receive(second, m));
            awaitBlocked(secondPid);
            first.commit();

            if (isolation == Connection.TRANSACTION_READ_COMMITTED) {
                assertThat(waiting.get(10, TimeUnit.SECONDS).status()).isEqualTo(Receipt.Status.DUPLICATE);
            } else {
                assertThatThrownBy(() -> waiting.get(10, TimeUnit.SECONDS))
                        .cause().isInstanceOf(RetryableException.class)
                        .extracting(e -> ((RetryableException) e).sqlState()).isEqualTo("40001");
                second.rollback();
                // The retry, in a fresh transaction, sees the committed entry.
                assertThat(inbox.receive(second, m).status()).isEqualTo(Receipt.Status.DUPLICATE);
            }
            second.rollback();
        }
        assertThat(rows.count("message_key = 'race-" + isolation + "'")).isEqualTo(1);
    }

    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ,
            Connection.TRANSACTION_SERIALIZABLE})
    void receive_concurrentDuplicateAfterFirstRollsBack_becomesFirst(int isolation) throws Exception {
        InboundMessage m = InboundMessage.of("undo-" + isolation, new byte[] {1});
        try (Connection first = begin(isolation); Connection second = PG.connection()) {
            int secondPid = pid(second);
            second.setTransactionIsolation(isolation);
            second.setAutoCommit(false);
            assertThat(inbox.receive(first, m).isFirst()).isTrue();

            CompletableFuture<Receipt> waiting = CompletableFuture.supplyAsync(() -> inbox.receive(second, m));
            awaitBlocked(secondPid);
            first.rollback();

            assertThat(waiting.get(10, TimeUnit.SECONDS).status()).isEqualTo(Receipt.Status.FIRST);
            second.commit();
        }
        assertThat(rows.count("message_key = 'undo-" + isolation + "'")).isEqualTo(1);
    }

    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ,
            Connection.TRANSACTION_SERIALIZABLE})
    void process_concurrentDuplicatesAtEachLevel_runTheHandlerOncePerKey(int isolation) throws Exception {
        DataSource ds = atIsolation(PG.dataSource(), isolation);
        String insert = "insert into " + PG.schema() + ".business values (?)";
        int threads = 8;
        int keys = 25;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<List<Outcome>>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            results.add(pool.submit(() -> {
                start.await();
                List<Outcome> outcomes = new ArrayList<>();
                for (int k = 0; k < keys; k++) {
                    InboundMessage m = InboundMessage.of("p" + isolation + "-" + k, new byte[] {(byte) k});
                    outcomes.add(inbox.process(ds, m, (tx, msg) -> {
                        try (PreparedStatement ps = tx.prepareStatement(insert)) {
                            ps.setString(1, msg.key());
                            ps.executeUpdate();
                        }
                        return null;
                    }));
                }
                return outcomes;
            }));
        }
        start.countDown();
        List<Outcome> all = new ArrayList<>();
        for (Future<List<Outcome>> f : results) {
            all.addAll(f.get(2, TimeUnit.MINUTES));
        }
        pool.shutdown();

        assertThat(all).extracting(Outcome::status)
                .containsOnly(Outcome.Status.PROCESSED, Outcome.Status.DUPLICATE)
                .filteredOn(s -> s == Outcome.Status.PROCESSED).hasSize(keys);
        assertThat(rows.queryLong("select count(*) from " + PG.schema() + ".business where message_key like 'p"
                + isolation + "-%'")).isEqualTo(keys);
    }

    /** {@code ds} whose connections run at {@code isolation}; the pool restores its default on return. */
    private static DataSource atIsolation(DataSource ds, int isolation) {
        return (DataSource) Proxy.newProxyInstance(InboxIsolationIT.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    Object result;
                    try {
                        result = method.invoke(ds, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                    if (result instanceof Connection c) {
                        c.setTransactionIsolation(isolation);
                    }
                    return result;
                });
    }
}
