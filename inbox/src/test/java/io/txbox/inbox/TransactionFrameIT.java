package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.internal.TransactionFrame;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** The frame around the transactions the inbox and the consumers run on a borrowed connection, on each database. */
class TransactionFrameIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    private final List<String> cleanupFailures = new CopyOnWriteArrayList<>();

    private static void insert(Rows rows, Connection c, String key) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.executeUpdate("insert into " + rows.inbox() + " (consumer, message_key, status, attempts, received_at)"
                    + " values ('frame', '" + key + "', 'COMPLETED', 1, " + rows.now() + ")");
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void close_workLeftItsTransactionOpen_rolledBackAndAutoCommitBackOn(TestDatabase db) throws SQLException {
        Rows rows = Rows.of(db);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(true);
            try (TransactionFrame tx = TransactionFrame.begin(c, (step, e) -> cleanupFailures.add(step))) {
                assertThat(c.getAutoCommit()).isFalse();
                insert(rows, c, "left-open");
            }
            assertThat(c.getAutoCommit()).isTrue();
        }
        assertThat(rows.count("consumer = 'frame' and message_key = 'left-open'")).isZero();
        assertThat(cleanupFailures).isEmpty();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void commit_thenClose_workKeptAndConnectionInTheModeItCameIn(TestDatabase db) throws SQLException {
        Rows rows = Rows.of(db);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            try (TransactionFrame tx = TransactionFrame.begin(c, (step, e) -> cleanupFailures.add(step))) {
                insert(rows, c, "committed");
                tx.commit();
            }
            assertThat(c.getAutoCommit()).isFalse();
        }
        assertThat(rows.count("consumer = 'frame' and message_key = 'committed'")).isEqualTo(1);
        assertThat(cleanupFailures).isEmpty();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void commitWork_workThrows_nothingCommittedAndTheFailurePropagates(TestDatabase db) throws SQLException {
        Rows rows = Rows.of(db);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(true);
            assertThatThrownBy(() -> TransactionFrame.commit(c, (step, e) -> cleanupFailures.add(step), tx -> {
                insert(rows, tx, "thrown");
                throw new SQLException("the work failed");
            })).isInstanceOf(SQLException.class).hasMessage("the work failed");
            assertThat(c.getAutoCommit()).isTrue();
        }
        assertThat(rows.count("consumer = 'frame' and message_key = 'thrown'")).isZero();
        assertThat(cleanupFailures).isEmpty();
    }
}
