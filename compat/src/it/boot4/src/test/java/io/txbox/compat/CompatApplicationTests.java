package io.txbox.compat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Receipt;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.spring.TxboxTemplate;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

@SpringBootTest
class CompatApplicationTests {
    @Autowired DataSource dataSource;
    @Autowired JdbcTemplate jdbc;
    @Autowired Outbox outbox;
    @Autowired Inbox inbox;
    @Autowired TxboxTables tables;
    @Autowired TxboxTemplate txbox;

    @Test
    void outboxAndInbox_commitWithTheServicesTransaction() throws Exception {
        byte[] payload = "order 7 paid".getBytes(StandardCharsets.UTF_8);
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            Receipt receipt = inbox.receive(c, InboundMessage.of("order-7", payload));
            boolean sent = outbox.send(c, OutboxMessage.builder(StepKey.of("order-7", "charge"), "payments")
                    .payload(payload).build());
            c.commit();
            assertThat(receipt.isFirst()).isTrue();
            assertThat(sent).isTrue();
        }
        Integer rows = jdbc.queryForObject("select count(*) from " + tables.schema() + "." + tables.prefix()
                + "outbox where step_key = 'order-7:charge'", Integer.class);
        assertThat(rows).isEqualTo(1);
    }

    @Test
    void starter_txboxTemplateProcess_handlerWritesCommitWithTheInboxEntry_redeliveryIsDuplicate() {
        jdbc.execute("create table if not exists " + tables.schema() + ".shipments (order_id text not null)");
        InboundMessage paid = InboundMessage.of("order-8", "order 8 paid".getBytes(StandardCharsets.UTF_8));
        Handler ship = (tx, m) -> {
            jdbc.update("insert into " + tables.schema() + ".shipments (order_id) values (?)", m.key());
            return null;
        };
        assertThat(txbox.process(paid, ship).status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(txbox.process(paid, ship).status()).isEqualTo(Outcome.Status.DUPLICATE);
        assertThat(jdbc.queryForObject("select count(*) from " + tables.schema() + ".shipments", Integer.class))
                .isEqualTo(1);
    }

    @Test
    void txboxBringsNoJooqOntoTheApplicationsClasspath() {
        assertThatThrownBy(() -> Class.forName("org.jooq.DSLContext")).isInstanceOf(ClassNotFoundException.class);
    }
}
