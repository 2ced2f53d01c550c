package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A Spring application that builds its inbox with {@link Inbox#builder} (no starter) and writes
 * through Spring's transactions ({@code DataSourceTransactionManager}, {@code TransactionTemplate},
 * {@code JdbcTemplate}): the calls that would split a Spring transaction's commit refuse before
 * writing anything, and the fix they name keeps the entry and the work together.
 */
class SpringTransactionIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    private Rows rows;
    private DataSource ds;
    private Inbox inbox;
    private TransactionTemplate transactions;
    private JdbcTemplate jdbc;
    private String business;

    private void use(TestDatabase db) {
        rows = Rows.of(db);
        ds = db.dataSource();
        inbox = Inbox.builder("spring-plain").tables(rows.tables).build();
        transactions = new TransactionTemplate(new DataSourceTransactionManager(ds));
        jdbc = new JdbcTemplate(ds);
        business = rows.table("spring_business");
        rows.execute("create table if not exists " + business + " (message_key " + rows.text() + " not null)");
    }

    private long entries(String key) {
        return rows.count("consumer = 'spring-plain' and message_key = '" + key + "'");
    }

    private long businessRows(String key) {
        return rows.queryLong("select count(*) from " + business + " where message_key = '" + key + "'");
    }

    /** The handler of a Spring application: it writes through {@code JdbcTemplate}. */
    private Handler writingThroughSpring() {
        return (tx, m) -> {
            jdbc.update("insert into " + business + " values (?)", m.key());
            return null;
        };
    }

    private void insert(Connection tx, String key) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("insert into " + business + " values (?)")) {
            ps.setString(1, key);
            ps.executeUpdate();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_insideTransactionTemplate_refusedNamingTheFixAndTheRedeliveryRunsTheWork(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("template-1", new byte[] {1});
        transactions.executeWithoutResult(status -> {
            assertThatThrownBy(() -> inbox.process(ds, m, writingThroughSpring()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("inside an active Spring transaction")
                    .hasMessageContaining("TxboxTemplate.process")
                    .hasMessageContaining("Inbox.receive on the Spring-managed connection");
            status.setRollbackOnly();
        });
        assertThat(entries("template-1")).as("no entry was written").isZero();

        // the fix the message names: receive on the Spring-managed connection, the work beside it
        transactions.executeWithoutResult(status -> {
            Connection c = DataSourceUtils.getConnection(ds);
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            jdbc.update("insert into " + business + " values (?)", m.key());
            status.setRollbackOnly(); // the outer rollback takes the entry with the work
        });
        assertThat(entries("template-1")).isZero();
        assertThat(businessRows("template-1")).isZero();
        transactions.executeWithoutResult(status -> {
            assertThat(inbox.receive(DataSourceUtils.getConnection(ds), m).isFirst())
                    .as("the redelivery runs the work again").isTrue();
            jdbc.update("insert into " + business + " values (?)", m.key());
        });
        assertThat(businessRows("template-1")).isEqualTo(1);
        assertThat(inbox.process(ds, m, writingThroughSpring()).status()).isEqualTo(Outcome.Status.DUPLICATE);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_throughTransactionAwareProxy_refusedAndAnEarlierWriteRollsBackWithTheTransaction(TestDatabase db) {
        use(db);
        DataSource proxy = new TransactionAwareDataSourceProxy(ds);
        InboundMessage m = InboundMessage.of("proxy-1", new byte[] {1});
        transactions.executeWithoutResult(status -> {
            jdbc.update("insert into " + business + " values (?)", "before-proxy-1");
            assertThatThrownBy(() -> inbox.process(proxy, m, (tx, msg) -> {
                insert(tx, msg.key());
                return null;
            })).isInstanceOf(IllegalStateException.class).hasMessageContaining("TxboxTemplate.process");
            status.setRollbackOnly();
        });
        assertThat(businessRows("before-proxy-1")).as("the write made before the call").isZero();
        assertThat(businessRows("proxy-1")).isZero();
        assertThat(entries("proxy-1")).isZero();
    }

    /**
     * Through the proxy every call that commits on its own is refused; on the plain data source a
     * two-phase claim still commits on its own, as it must to outlive a rollback.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_throughTransactionAwareProxyRefused_onThePlainDataSourceCommitsOnItsOwn(TestDatabase db) {
        use(db);
        DataSource proxy = new TransactionAwareDataSourceProxy(ds);
        InboundMessage m = InboundMessage.of("claim-1", new byte[] {1});
        transactions.executeWithoutResult(status -> {
            jdbc.update("insert into " + business + " values (?)", "before-claim-1");
            assertThatThrownBy(() -> inbox.claim(proxy, m)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("TransactionAwareDataSourceProxy")
                    .hasMessageContaining("commit the Spring transaction halfway");
            assertThatThrownBy(() -> inbox.listDead(proxy, 10)).isInstanceOf(IllegalStateException.class);
            assertThat(inbox.claim(ds, m).acquired()).isTrue();
            status.setRollbackOnly();
        });
        assertThat(businessRows("before-claim-1")).isZero();
        assertThat(rows.status("spring-plain", "claim-1")).isEqualTo("PROCESSING");
        // outside a Spring transaction the proxy hands out a connection of its own, and is fine
        assertThat(inbox.listDead(proxy, 10)).isEmpty();
    }
}
