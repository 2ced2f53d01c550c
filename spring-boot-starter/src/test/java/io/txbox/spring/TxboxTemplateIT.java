package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestPostgres;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

@SpringBootTest(classes = TestApplication.class, properties = {"spring.application.name=shipping", "spring.flyway.enabled=false"})
@DirtiesContext
class TxboxTemplateIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabaseProperties.register(registry, PG, PG::schema);
    }

    @Autowired TxboxTemplate txbox;
    @Autowired Inbox inbox;
    @Autowired TxboxTables tables;
    @Autowired ShipmentService service;
    @Autowired ShipmentRepository shipments;
    @Autowired JdbcTemplate jdbc;
    @Autowired PlatformTransactionManager transactionManager;
    TransactionTemplate tx;

    @BeforeEach
    void clean() {
        tx = new TransactionTemplate(transactionManager);
        jdbc.execute("CREATE TABLE IF NOT EXISTS audit_log (order_id text NOT NULL, event text NOT NULL)");
        jdbc.execute("TRUNCATE audit_log, shipment, " + tables.inboxTable() + ", " + tables.outboxTable());
    }

    @Test
    void beans_fromProperties_jpaTransactionManagerAndApplicationName() {
        assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
        assertThat(inbox.consumer()).isEqualTo("shipping");
        assertThat(tables.schema()).isEqualTo(PG.schema());
    }

    @Test
    void process_outerTransactionRollsBack_redeliveryRunsTheWorkExactlyOnce() {
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

    @Test
    void process_insideCommittedOuterTransaction_commitsWithIt() {
        tx.executeWithoutResult(status -> {
            jdbc.update("INSERT INTO audit_log (order_id, event) VALUES ('order-2', 'before')");
            assertThat(service.onOrderPaid(message("order-2")).status()).isEqualTo(Outcome.Status.PROCESSED);
        });

        assertThat(count("audit_log")).isEqualTo(2);
        assertThat(count("shipment")).isEqualTo(1);
        assertThat(count(tables.inboxTable())).isEqualTo(1);
    }

    @Test
    void process_handlerThrowsWithoutOuterTransaction_rollsBackAndCountsTheFailure() {
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

    @Test
    void process_handlerThrowsInsideOuterTransaction_rethrowsAndCountsNothing() {
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> txbox.process(message("order-4"), (c, m) -> {
            throw new IllegalArgumentException("bad order");
        }))).isInstanceOf(IllegalArgumentException.class).hasMessage("bad order");

        assertThat(count(tables.inboxTable())).isZero();
    }

    @Test
    void plainInboxProcess_insideSpringTransaction_throwsAndWritesNothing() {
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

    @Test
    void plainInboxProcess_withoutSpringTransaction_stillWorks() {
        Outcome outcome = inbox.process(jdbc.getDataSource(), message("order-6"), (c, m) -> null);

        assertThat(outcome.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(count(tables.inboxTable())).isEqualTo(1);
    }

    @Test
    void send_rolledBackTransaction_leavesNoRow() {
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
            assertThat(txbox.send(outgoing("order-7"))).isTrue();
            throw new IllegalStateException("business rule broken");
        })).hasMessage("business rule broken");

        assertThat(count(tables.outboxTable())).isZero();
    }

    @Test
    void send_committedTransaction_writesExactlyOneRow() {
        tx.executeWithoutResult(status -> {
            assertThat(txbox.send(outgoing("order-8"))).isTrue();
            assertThat(txbox.send(outgoing("order-8"))).isFalse();
        });

        assertThat(count(tables.outboxTable())).isEqualTo(1);
    }

    @Test
    void sendAll_committedTransaction_writesEveryRow() {
        tx.executeWithoutResult(status -> assertThat(txbox.sendAll(java.util.List.of(outgoing("a"), outgoing("b"))))
                .containsExactly(true, true));

        assertThat(count(tables.outboxTable())).isEqualTo(2);
    }

    @Test
    void send_withoutTransaction_refusedWithAClearError() {
        assertThatThrownBy(() -> txbox.send(outgoing("order-9")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("TxboxTemplate.send needs an active Spring transaction");
        assertThatThrownBy(() -> txbox.receive(message("order-9")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("TxboxTemplate.receive needs an active Spring transaction");

        assertThat(count(tables.outboxTable())).isZero();
        assertThat(count(tables.inboxTable())).isZero();
    }

    @Test
    void receive_inRolledBackTransaction_isFirstAgainLater() {
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
