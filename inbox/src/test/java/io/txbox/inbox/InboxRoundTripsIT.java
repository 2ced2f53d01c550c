package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxException;
import io.txbox.internal.Dialect;
import io.txbox.internal.KeyLogs;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * What a receive sends down the caller's connection: the statements it executes, counted
 * through a proxy. Each is one round trip, so this is the cost the inbox adds to a transaction.
 */
class InboxRoundTripsIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_firstAndDuplicate_isOneStatementEachAndKeepsTheStoreResultRule(TestDatabase db) throws SQLException {
        Rows rows = Rows.of(db);
        Inbox inbox = Inbox.builder("round-trips").tables(rows.tables).build();
        InboundMessage m = InboundMessage.of("k-counted", "pay 10".getBytes(UTF_8));
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            inbox.receive(c, InboundMessage.of("k-warm", new byte[] {1})); // the first call learns the dialect
            c.commit();

            Counting counted = new Counting(c);
            Receipt first = inbox.receive(counted.connection, m);
            assertThat(first.status()).isEqualTo(Receipt.Status.FIRST);
            assertThat(counted.statements).hasSize(1);
            inbox.storeResult(c, m, "stored".getBytes(UTF_8));
            c.commit();

            counted.statements.clear();
            Receipt duplicate = inbox.receive(counted.connection, m);
            assertThat(duplicate.status()).isEqualTo(Receipt.Status.DUPLICATE);
            assertThat(duplicate.result()).asString(UTF_8).isEqualTo("stored");
            // PostgreSQL's upsert returns no row it did not write, so a read follows
            assertThat(counted.statements).hasSize(rows.postgres() ? 2 : 1);
            assertThatThrownBy(() -> inbox.storeResult(c, m, "again".getBytes(UTF_8)))
                    .isInstanceOf(TxboxException.class).hasMessageContaining("did not report FIRST");
            c.rollback();
        }
    }

    /**
     * MySQL has no {@code INSERT ... RETURNING}: its store writes, reads the row back locked and
     * sets the savepoint after a FIRST. Run here on MariaDB with that path's statements in
     * MariaDB's words (MySQL's own upsert names the new row {@code AS excluded}, which MariaDB lacks).
     */
    @Test
    void receive_withoutReturning_writesReadsAndSetsTheSavepointAndKeepsTheStoreResultRule() throws SQLException {
        TestDatabase db = DBS.mariadb();
        Rows rows = Rows.of(db);
        InboxStore store = new MariaDbInboxStore(new MariaDbInboxSql(rows.tables, Dialect.MARIADB, false, 3,
                30_000_000L, 1000), 1000, "round-trips");
        Scope s = new Scope("round-trips-mysql", "k-mysql", null, KeyLogs.PLAIN);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            Counting counted = new Counting(c);
            assertThat(store.receive(counted.connection, s, null, new Statuses())).isEqualTo("written");
            assertThat(counted.statements).hasSize(3);
            assertThat(counted.statements.get(0)).startsWith("insert into").doesNotContain("returning");
            assertThat(counted.statements.get(2)).startsWith("SAVEPOINT txbox_");
            assertThat(store.storeResult(c, s, "stored".getBytes(UTF_8))).isEqualTo(1);
            c.commit();

            assertThat(store.receive(c, s, null, new Statuses())).isEqualTo("completed");
            assertThat(store.storeResult(c, s, "again".getBytes(UTF_8))).isZero();
            c.rollback();
        }
        assertThat(rows.string("select " + rows.utf8("result") + " from " + rows.inbox()
                + " where consumer = 'round-trips-mysql'")).isEqualTo("stored");
    }

    /** A connection whose statements record what they execute. */
    private static final class Counting {
        final List<String> statements = new ArrayList<>();
        final Connection connection;

        Counting(Connection target) {
            connection = (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
                    new Class<?>[] {Connection.class}, (proxy, m, args) -> {
                        Object result = call(target, m, args);
                        if (result instanceof Statement st) {
                            String sql = args != null && args.length > 0 && args[0] instanceof String q ? q : null;
                            return counting(st, sql);
                        }
                        return result;
                    });
        }

        private Statement counting(Statement target, String prepared) {
            Class<?> type = target instanceof java.sql.PreparedStatement ? java.sql.PreparedStatement.class
                    : Statement.class;
            return (Statement) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {type},
                    (proxy, m, args) -> {
                        if (m.getName().startsWith("execute")) {
                            statements.add(args != null && args.length > 0 && args[0] instanceof String q ? q
                                    : prepared);
                        }
                        return call(target, m, args);
                    });
        }

        private static Object call(Object target, java.lang.reflect.Method m, Object[] args) throws Throwable {
            try {
                return m.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }

    /** Each way a receive can end, as a word. */
    private static final class Statuses implements InboxStore.Answers<String> {
        @Override
        public String written(InboxStore.Written w) {
            return "written";
        }

        @Override
        public String keyReused(InboxStore.Entry e) {
            return "key reused";
        }

        @Override
        public String completed(InboxStore.Entry e) {
            return "completed";
        }

        @Override
        public String dead(InboxStore.Entry e) {
            return "dead";
        }

        @Override
        public String inFlight(InboxStore.Entry e) {
            return "in flight";
        }
    }
}
