package io.txbox.jooq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Receipt;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The application's jOOQ transaction carries txbox's rows: they commit and roll back with it. */
class TxboxJooqIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static TxboxTables tables;
    static Outbox outbox;
    static Inbox inbox;

    @BeforeAll
    static void migrate() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        outbox = Outbox.builder().tables(tables).build();
        inbox = Inbox.builder("orders").tables(tables).build();
    }

    private static OutboxMessage message(String original) {
        return OutboxMessage.builder(StepKey.of(original, "s"), "payments").payload(new byte[] {1}).build();
    }

    private static long count(String table, String where) throws Exception {
        try (Connection c = PG.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select count(*) from " + PG.schema() + "." + tables.prefix()
                        + table + " where " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void send_inJooqTransaction_commitsWithIt() throws Exception {
        boolean sent = DSL.using(PG.dataSource(), SQLDialect.POSTGRES)
                .transactionResult(cfg -> TxboxJooq.send(cfg.dsl(), outbox, message("J-commit")));
        assertThat(sent).isTrue();
        assertThat(count("outbox", "original_key = 'J-commit'")).isEqualTo(1);
    }

    @Test
    void send_inJooqTransactionThatRollsBack_leavesNoRow() throws Exception {
        assertThatThrownBy(() -> DSL.using(PG.dataSource(), SQLDialect.POSTGRES).transaction(cfg -> {
            TxboxJooq.sendAll(cfg.dsl(), outbox, List.of(message("J-rb1"), message("J-rb2")));
            throw new IllegalStateException("business failure");
        })).hasMessageContaining("business failure");
        assertThat(count("outbox", "original_key like 'J-rb%'")).isZero();
    }

    @Test
    void receive_inJooqTransaction_recordsTheEntryOnce() throws Exception {
        InboundMessage m = InboundMessage.of("k-jooq", new byte[] {1});
        var ctx = DSL.using(PG.dataSource(), SQLDialect.POSTGRES);
        Receipt first = ctx.transactionResult(cfg -> TxboxJooq.receive(cfg.dsl(), inbox, m));
        Receipt second = ctx.transactionResult(cfg -> TxboxJooq.receive(cfg.dsl(), inbox, m));
        assertThat(first.isFirst()).isTrue();
        assertThat(second.status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(count("inbox", "message_key = 'k-jooq'")).isEqualTo(1);
    }

    @Test
    void send_onContextOutsideATransaction_isRefusedAndWritesNothing() throws Exception {
        var autoCommit = DSL.using(PG.dataSource(), SQLDialect.POSTGRES);
        assertThatThrownBy(() -> TxboxJooq.send(autoCommit, outbox, message("J-auto")))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("setAutoCommit(false)");
        assertThat(count("outbox", "original_key = 'J-auto'")).isZero();
    }

    @Test
    void send_nullArguments_areRefusedByName() {
        var ctx = DSL.using(SQLDialect.POSTGRES);
        assertThatThrownBy(() -> TxboxJooq.send(null, outbox, message("x")))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("tx");
        assertThatThrownBy(() -> TxboxJooq.send(ctx, null, message("x")))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("outbox");
        assertThatThrownBy(() -> TxboxJooq.receive(ctx, inbox, null))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("message");
    }
}
