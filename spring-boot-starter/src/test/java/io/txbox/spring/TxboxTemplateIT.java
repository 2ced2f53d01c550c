package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** {@link TxboxTemplate} in a Spring Boot service with JPA, one application per database. */
class TxboxTemplateIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @RegisterExtension
    static final AppPerDatabase APPS = new AppPerDatabase(db ->
            new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                    .properties(TestDatabaseProperties.properties(db, db.schema()))
                    .properties("spring.application.name=shipping", "spring.flyway.enabled=false")
                    .run());

    TxboxTemplate txbox;
    Inbox inbox;
    TxboxTables tables;
    ShipmentService service;
    ShipmentRepository shipments;
    JdbcTemplate jdbc;
    PlatformTransactionManager transactionManager;
    TransactionTemplate tx;

    /** Takes the beans of {@code db}'s application and empties its tables. */
    void on(TestDatabase db) {
        ConfigurableApplicationContext app = APPS.on(db);
        txbox = app.getBean(TxboxTemplate.class);
        inbox = app.getBean(Inbox.class);
        tables = app.getBean(TxboxTables.class);
        service = app.getBean(ShipmentService.class);
        shipments = app.getBean(ShipmentRepository.class);
        jdbc = app.getBean(JdbcTemplate.class);
        transactionManager = app.getBean(PlatformTransactionManager.class);
        tx = new TransactionTemplate(transactionManager);
        jdbc.execute("CREATE TABLE IF NOT EXISTS audit_log (order_id text NOT NULL, event text NOT NULL)");
        for (String table : new String[] {"audit_log", "shipment", tables.inboxTable(), tables.outboxTable()}) {
            jdbc.execute("TRUNCATE TABLE " + table);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void beans_fromProperties_jpaTransactionManagerAndApplicationName(TestDatabase db) {
        on(db);
        assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
        assertThat(inbox.consumer()).isEqualTo("shipping");
        assertThat(tables.schema()).isEqualTo(db.schema());
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_outerTransactionRollsBack_redeliveryRunsTheWorkExactlyOnce(TestDatabase db) {
        on(db);
        InboundMessage paid = message("order-1");

        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
            Outcome first = service.onOrderPaid(paid);
            assertThat(first.status()).isEqualTo(Outcome.Status.PROCESSED);
            throw new IllegalStateException("the outer transaction fails after the handler");
        })).hasMessageContaining("outer transaction fails");

        assertThat(count("shipment")).isZero();
        assertThat(count("audit_log")).isZero();
        assertThat(count(tables.inboxTable())).isZero();
        assertThat(count(tables.outboxTable())).isZero();

        assertThat(service.onOrderPaid(paid).status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(service.onOrderPaid(paid).status()).isEqualTo(Outcome.Status.DUPLICATE);

        assertThat(count("shipment")).isEqualTo(1);
        assertThat(count("audit_log")).isEqualTo(1);
        assertThat(count(tables.outboxTable())).isEqualTo(1);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM " + tables.inboxTable()
                + " WHERE message_key = 'order-1' AND status = 'COMPLETED'", Long.class)).isEqualTo(1);
        assertThat(shipments.findById("order-1")).isPresent();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_insideCommittedOuterTransaction_commitsWithIt(TestDatabase db) {
        on(db);
        tx.executeWithoutResult(status -> {
            jdbc.update("INSERT INTO audit_log (order_id, event) VALUES ('order-2', 'before')");
            assertThat(service.onOrderPaid(message("order-2")).status()).isEqualTo(Outcome.Status.PROCESSED);
        });

        assertThat(count("audit_log")).isEqualTo(2);
        assertThat(count("shipment")).isEqualTo(1);
        assertThat(count(tables.inboxTable())).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerThrowsWithoutOuterTransaction_rollsBackAndCountsTheFailure(TestDatabase db) {
        on(db);
        InboundMessage paid = message("order-3");

        Outcome outcome = txbox.process(paid, (c, m) -> {
            jdbc.update("INSERT INTO audit_log (order_id, event) VALUES (?, 'half')", m.key());
            throw new IllegalStateException("payment service down");
        });

        assertThat(outcome.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(outcome.attempts()).isEqualTo(1);
        assertThat(outcome.error()).hasMessage("payment service down");
        assertThat(count("audit_log")).isZero();
        assertThat(jdbc.queryForObject("SELECT status FROM " + tables.inboxTable() + " WHERE message_key = 'order-3'",
                String.class)).isEqualTo("FAILED");

        assertThat(service.onOrderPaid(paid).status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(count("shipment")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerThrowsInsideOuterTransaction_rethrowsAndCountsNothing(TestDatabase db) {
        on(db);
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> txbox.process(message("order-4"), (c, m) -> {
            throw new IllegalArgumentException("bad order");
        }))).isInstanceOf(IllegalArgumentException.class).hasMessage("bad order");

        assertThat(count(tables.inboxTable())).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void plainInboxProcess_insideSpringTransaction_throwsAndWritesNothing(TestDatabase db) {
        on(db);
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
            jdbc.update("INSERT INTO audit_log (order_id, event) VALUES ('order-5', 'before')");
            inbox.process(jdbc.getDataSource(), message("order-5"), (c, m) -> {
                jdbc.update("INSERT INTO audit_log (order_id, event) VALUES (?, 'handled')", m.key());
                return null;
            });
        })).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("inside an active Spring transaction")
                .hasMessageContaining("TxboxTemplate.process");

        assertThat(count("audit_log")).isZero();
        assertThat(count(tables.inboxTable())).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void plainInboxProcess_withoutSpringTransaction_stillWorks(TestDatabase db) {
        on(db);
        Outcome outcome = inbox.process(jdbc.getDataSource(), message("order-6"), (c, m) -> null);

        assertThat(outcome.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(count(tables.inboxTable())).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_rolledBackTransaction_leavesNoRow(TestDatabase db) {
        on(db);
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
            assertThat(txbox.send(outgoing("order-7"))).isTrue();
            throw new IllegalStateException("business rule broken");
        })).hasMessage("business rule broken");

        assertThat(count(tables.outboxTable())).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_committedTransaction_writesExactlyOneRow(TestDatabase db) {
        on(db);
        tx.executeWithoutResult(status -> {
            assertThat(txbox.send(outgoing("order-8"))).isTrue();
            assertThat(txbox.send(outgoing("order-8"))).isFalse();
        });

        assertThat(count(tables.outboxTable())).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void sendAll_committedTransaction_writesEveryRow(TestDatabase db) {
        on(db);
        tx.executeWithoutResult(status -> assertThat(txbox.sendAll(java.util.List.of(outgoing("a"), outgoing("b"))))
                .containsExactly(true, true));

        assertThat(count(tables.outboxTable())).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_withoutTransaction_refusedWithAClearError(TestDatabase db) {
        on(db);
        assertThatThrownBy(() -> txbox.send(outgoing("order-9")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("TxboxTemplate.send needs an active Spring transaction");
        assertThatThrownBy(() -> txbox.receive(message("order-9")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("TxboxTemplate.receive needs an active Spring transaction");

        assertThat(count(tables.outboxTable())).isZero();
        assertThat(count(tables.inboxTable())).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_inRolledBackTransaction_isFirstAgainLater(TestDatabase db) {
        on(db);
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
            assertThat(txbox.receive(message("order-10")).isFirst()).isTrue();
            throw new IllegalStateException("rollback");
        })).hasMessage("rollback");

        tx.executeWithoutResult(status -> assertThat(txbox.receive(message("order-10")).isFirst()).isTrue());
        tx.executeWithoutResult(status -> assertThat(txbox.receive(message("order-10")).isFirst()).isFalse());
    }

    private long count(String table) {
        Long n = jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class);
        return n == null ? 0 : n;
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of(key, ("{\"orderId\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8));
    }

    private static OutboxMessage outgoing(String key) {
        return OutboxMessage.builder(StepKey.of(key, "notify"), "notifications").payload("{}").build();
    }
}
