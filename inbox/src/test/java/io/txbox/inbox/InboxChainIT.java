package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** {@link Inbox#processChained}: each message in its own transaction, commits sent with the next receive. */
class InboxChainIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    private Rows rows;
    private Inbox inbox;
    private OneConnection ds;
    private String business;

    /** A consumer and a business table of the test's own. */
    private void use(TestDatabase db, String consumer) {
        rows = Rows.of(db);
        inbox = Inbox.builder(consumer).tables(rows.tables).maxAttempts(3).build();
        business = rows.table(consumer.replace('-', '_'));
        rows.execute("create table " + business + " (message_key " + rows.text() + " not null)");
        ds = new OneConnection(db.connection());
    }

    private long business(String key) {
        return rows.queryLong("select count(*) from " + business + " where message_key = '" + key + "'");
    }

    /** Inserts a business row; throws for the key "poison". */
    private Handler handler() {
        return (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("insert into " + business + " values (?)")) {
                ps.setString(1, m.key());
                ps.executeUpdate();
            }
            if (m.key().startsWith("poison")) {
                throw new IllegalStateException("cannot parse");
            }
            return ("done " + m.key()).getBytes(UTF_8);
        };
    }

    private static List<InboundMessage> messages(String... keys) {
        return java.util.Arrays.stream(keys).map(k -> InboundMessage.of(k, "payload".getBytes(UTF_8))).toList();
    }

    private static List<Outcome.Status> statuses(List<Outcome> outcomes) {
        return outcomes.stream().map(Outcome::status).toList();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processChained_duplicateAndHandlerFailure_eachMessageItsOwnOutcomeAndEffectsOnce(TestDatabase db)
            throws SQLException {
        use(db, "chain-mixed");

        List<Outcome> outcomes = inbox.processChained(ds, messages("a", "b", "a", "c", "poison", "d"), handler(),
                o -> true);

        assertThat(statuses(outcomes)).containsExactly(Outcome.Status.PROCESSED, Outcome.Status.PROCESSED,
                Outcome.Status.DUPLICATE, Outcome.Status.PROCESSED, Outcome.Status.FAILED, Outcome.Status.PROCESSED);
        assertThat(new String(outcomes.get(2).result(), UTF_8)).isEqualTo("done a");
        for (String key : List.of("a", "b", "c", "d")) {
            assertThat(business(key)).as("business rows of %s", key).isEqualTo(1);
        }
        assertThat(business("poison")).isZero();
        assertThat(rows.status("chain-mixed", "poison")).isEqualTo("FAILED");
        // On PostgreSQL the commits of a, b and c went with the next receive; a rolled-back
        // duplicate or failure leaves nothing to commit, so the next one begins alone.
        assertThat(ds.chained.get()).isEqualTo(rows.postgres() ? 3 : 0);
        assertThat(ds.connection.getAutoCommit()).isTrue();
        ds.connection.close();
    }

    /** Inserts a business row, then runs a failing statement and swallows its SQLException. */
    private Handler swallowing() {
        Handler inserting = handler();
        return (tx, m) -> {
            byte[] result = inserting.handle(tx, m);
            try (PreparedStatement ps = tx.prepareStatement("select * from no_such_table_in_this_test")) {
                ps.executeQuery();
            } catch (SQLException ignored) {
                // the mistake under test: on PostgreSQL the transaction is now aborted
            }
            return result;
        };
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processAndChain_handlerSwallowsAnSqlError_neverReportedProcessedWithoutItsCommit(TestDatabase db)
            throws SQLException {
        use(db, "chain-swallow");
        boolean pg = rows.postgres();
        Outcome.Status expected = pg ? Outcome.Status.FAILED : Outcome.Status.PROCESSED;

        Outcome alone = inbox.process(ds, InboundMessage.of("s1", "payload".getBytes(UTF_8)), swallowing());
        List<Outcome> chained = inbox.processChained(ds, messages("a", "s2", "b"),
                (tx, m) -> m.key().equals("s2") ? swallowing().handle(tx, m) : handler().handle(tx, m), o -> true);

        // PostgreSQL turns the COMMIT of an aborted transaction into a silent ROLLBACK: a failure,
        // counted and retried. MariaDB rolls back only the failed statement and commits the rest.
        assertThat(alone.status()).isEqualTo(expected);
        assertThat(statuses(chained)).containsExactly(Outcome.Status.PROCESSED, expected, Outcome.Status.PROCESSED);
        assertThat(business("s1")).isEqualTo(pg ? 0 : 1);
        assertThat(business("s2")).isEqualTo(pg ? 0 : 1);
        assertThat(business("a")).isEqualTo(1);
        assertThat(business("b")).isEqualTo(1);
        if (pg) {
            assertThat(alone.reason()).contains("aborted the transaction");
            assertThat(rows.status("chain-swallow", "s1")).isEqualTo("FAILED");
            assertThat(rows.status("chain-swallow", "s2")).isEqualTo("FAILED");
        }
        assertThat(ds.connection.getAutoCommit()).isTrue();
        ds.connection.close();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processChained_moreRefuses_stopsThereWithItsCommitDone(TestDatabase db) throws SQLException {
        use(db, "chain-stop");

        List<Outcome> outcomes = inbox.processChained(ds, messages("a", "b", "c"), handler(),
                o -> !"done b".equals(new String(o.result(), UTF_8)));

        assertThat(statuses(outcomes)).containsExactly(Outcome.Status.PROCESSED, Outcome.Status.PROCESSED);
        assertThat(business("b")).isEqualTo(1);
        assertThat(business("c")).isZero();
        assertThat(ds.connection.getAutoCommit()).isTrue();
        ds.connection.close();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processChained_keyReusedAfterACommit_stopsWithThatCommitReportedAndLeavesTheMessage(TestDatabase db)
            throws SQLException {
        use(db, "chain-reuse");
        List<InboundMessage> messages = List.of(InboundMessage.of("a", "one".getBytes(UTF_8)),
                InboundMessage.of("b", "one".getBytes(UTF_8)), InboundMessage.of("a", "two".getBytes(UTF_8)));

        List<Outcome> outcomes = inbox.processChained(ds, messages, handler(), o -> true);

        assertThat(statuses(outcomes)).containsExactly(Outcome.Status.PROCESSED, Outcome.Status.PROCESSED);
        assertThat(business("b")).isEqualTo(1);
        assertThat(inbox.process(ds, messages.get(2), handler()).status()).isEqualTo(Outcome.Status.KEY_REUSED);
        ds.connection.close();
    }

    /**
     * A deferred constraint trigger refuses the COMMIT of "c" once: that round trip carried d's
     * receive, which the server then skipped. Neither is reported; c runs again through process.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processChained_commitFails_thatMessageIsNotReportedAndNothingAfterItRan(TestDatabase db)
            throws SQLException {
        use(db, "chain-commit");
        if (!rows.postgres()) {
            ds.connection.close();
            return; // MariaDB has no deferred constraints; its commits do not travel with a receive
        }
        String schema = db.schema();
        rows.execute("create sequence if not exists " + schema + ".chain_commit_failures");
        rows.execute("create or replace function " + schema + ".chain_fail_commit_once() returns trigger"
                + " language plpgsql as $$ begin"
                + " if new.message_key = 'c' and nextval('" + schema + ".chain_commit_failures') = 1 then"
                + " raise exception 'refused at commit' using errcode = '23514'; end if; return null; end $$");
        rows.execute("create constraint trigger chain_fail_commit_once after insert on " + business
                + " deferrable initially deferred for each row execute function " + schema
                + ".chain_fail_commit_once()");

        List<Outcome> outcomes = inbox.processChained(ds, messages("a", "b", "c", "d"), handler(), o -> true);

        assertThat(statuses(outcomes)).containsExactly(Outcome.Status.PROCESSED, Outcome.Status.PROCESSED);
        assertThat(business("c")).isZero();
        assertThat(business("d")).isZero();
        assertThat(rows.status("chain-commit", "c")).isNull();
        assertThat(ds.connection.getAutoCommit()).isTrue();
        assertThat(inbox.process(ds, messages("c").get(0), handler()).status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(business("c")).isEqualTo(1);
        ds.connection.close();
    }

    /**
     * The inbox insert itself fails after the commit went through (a trigger refuses the key):
     * the committed message is reported, the refused one is left.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processChained_insertFailsAfterTheCommit_committedMessageReported(TestDatabase db) throws SQLException {
        use(db, "chain-insert");
        if (!rows.postgres()) {
            ds.connection.close();
            return; // the trigger is PostgreSQL's; MariaDB commits in a round trip of its own
        }
        String schema = db.schema();
        rows.execute("create or replace function " + schema + ".chain_refuse_key() returns trigger"
                + " language plpgsql as $$ begin"
                + " if new.message_key = 'refused' then raise exception 'refused key'; end if; return new; end $$");
        rows.execute("create trigger chain_refuse_key before insert on " + rows.inbox()
                + " for each row execute function " + schema + ".chain_refuse_key()");
        try {
            List<Outcome> outcomes = inbox.processChained(ds, messages("a", "refused", "b"), handler(), o -> true);

            assertThat(statuses(outcomes)).containsExactly(Outcome.Status.PROCESSED);
            assertThat(business("a")).isEqualTo(1);
            assertThat(business("b")).isZero();
            assertThat(ds.connection.getAutoCommit()).isTrue();
        } finally {
            rows.execute("drop trigger chain_refuse_key on " + rows.inbox());
            ds.connection.close();
        }
    }

    /**
     * Hands out one real connection (close does nothing; the test closes it) and counts the
     * statements that carry a COMMIT ahead of the receive.
     */
    private static final class OneConnection implements DataSource {
        final Connection connection;
        final AtomicInteger chained = new AtomicInteger();
        private final Connection handle;

        OneConnection(Connection connection) {
            this.connection = connection;
            this.handle = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                    new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                        if (method.getName().equals("close")) {
                            return null;
                        }
                        if (method.getName().equals("prepareStatement") && String.valueOf(args[0]).startsWith("COMMIT;")) {
                            chained.incrementAndGet();
                        }
                        try {
                            return method.invoke(connection, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        @Override
        public Connection getConnection() {
            return handle;
        }

        @Override
        public Connection getConnection(String username, String password) {
            return handle;
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {}

        @Override
        public void setLoginTimeout(int seconds) {}

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() {
            return Logger.getGlobal();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }
}
