package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class OutboxIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static TxboxTables tables;
    static Outbox outbox;

    @BeforeAll
    static void migrate() {
        tables = new TxboxTables(PG.schema(), "txbox_");
        TxboxMigrations.migrate(PG.dataSource(), tables);
        outbox = Outbox.builder().tables(tables).maxPayloadBytes(1000).build();
    }

    private static OutboxMessage message(String original, String step) {
        return OutboxMessage.builder(StepKey.of(original, step), "payments").routingKey("order-" + original)
                .payload("{\"amount\":10}").contentType("application/json").build();
    }

    @Test
    void send_committed_rowIsWrittenWithStepKeyOriginalAndLane() throws Exception {
        try (Connection c = PG.connection()) {
            c.setAutoCommit(false);
            assertThat(outbox.send(c, message("A1", "process-payment"))).isTrue();
            c.commit();
        }
        try (Connection c = PG.connection();
                PreparedStatement ps = c.prepareStatement("select original_key, destination, routing_key, lane, "
                        + "convert_from(payload, 'UTF8'), content_type from " + tables.qualified(tables.outboxTable())
                        + " where step_key = 'A1:process-payment'")) {
            ResultSet rs = ps.executeQuery();
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("A1");
            assertThat(rs.getString(2)).isEqualTo("payments");
            assertThat(rs.getString(3)).isEqualTo("order-A1");
            assertThat(rs.getShort(4)).isEqualTo(Lanes.of("order-A1", "A1:process-payment"));
            assertThat(rs.getString(5)).isEqualTo("{\"amount\":10}");
            assertThat(rs.getString(6)).isEqualTo("application/json");
        }
    }

    @Test
    void send_rolledBack_leavesNoRow() throws Exception {
        try (Connection c = PG.connection()) {
            c.setAutoCommit(false);
            outbox.send(c, message("R1", "process-payment"));
            c.rollback();
        }
        assertThat(count("step_key = 'R1:process-payment'")).isZero();
    }

    @Test
    void send_sameStepKeyTwice_secondIsNoOpNotError() throws Exception {
        try (Connection c = PG.connection()) {
            assertThat(outbox.send(c, message("D1", "process-payment"))).isTrue();
            assertThat(outbox.send(c, message("D1", "process-payment"))).isFalse();
        }
        assertThat(count("step_key = 'D1:process-payment'")).isEqualTo(1);
    }

    @Test
    void send_payloadOverCap_isRejectedAndNothingWritten() throws Exception {
        OutboxMessage big = OutboxMessage.builder(StepKey.of("BIG", "s"), "payments").payload(new byte[1001]).build();
        try (Connection c = PG.connection()) {
            assertThatThrownBy(() -> outbox.send(c, big)).isInstanceOf(InvalidInputException.class)
                    .hasMessageContaining("1001 bytes").hasMessageContaining("cap of 1000");
        }
        assertThat(count("original_key = 'BIG'")).isZero();
    }

    @Test
    void send_headersAndTraceContext_areStoredUtf8Safe() throws Exception {
        OutboxMessage m = OutboxMessage.builder(StepKey.of("H1", "s"), "payments")
                .header("x-emoji", "\uD83D\uDE00 caf\u00e9").header("x-b", "2")
                .traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").tracestate("congo=t61rcWkgMzE")
                .build();
        try (Connection c = PG.connection()) {
            outbox.send(c, m);
        }
        try (Connection c = PG.connection();
                PreparedStatement ps = c.prepareStatement("select header_names, header_values, traceparent, tracestate from "
                        + tables.qualified(tables.outboxTable()) + " where original_key = 'H1'")) {
            ResultSet rs = ps.executeQuery();
            rs.next();
            assertThat((String[]) rs.getArray(1).getArray()).containsExactly("x-emoji", "x-b");
            assertThat((String[]) rs.getArray(2).getArray()).containsExactly("\uD83D\uDE00 caf\u00e9", "2");
            assertThat(rs.getString(3)).isEqualTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
            assertThat(rs.getString(4)).isEqualTo("congo=t61rcWkgMzE");
        }
    }

    @Test
    void send_withDelay_isNotAvailableBeforeTheDatabaseClockPassesIt() throws Exception {
        OutboxMessage m = OutboxMessage.builder(StepKey.of("L1", "s"), "payments").delay(Duration.ofHours(1)).build();
        Instant at = Instant.parse("2030-01-01T00:00:00Z");
        OutboxMessage m2 = OutboxMessage.builder(StepKey.of("L2", "s"), "payments").availableAt(at).build();
        try (Connection c = PG.connection()) {
            outbox.send(c, m);
            outbox.send(c, m2);
        }
        assertThat(count("original_key = 'L1' and available_at > now() + interval '59 minutes'")).isEqualTo(1);
        assertThat(count("original_key = 'L2' and available_at = '2030-01-01T00:00:00Z'")).isEqualTo(1);
    }

    @Test
    void send_throughDslContext_writesInTheSameTransaction() throws Exception {
        try (Connection c = PG.connection()) {
            c.setAutoCommit(false);
            var ctx = DSL.using(c, SQLDialect.POSTGRES);
            assertThat(outbox.send(ctx, message("J1", "s"))).isTrue();
            c.rollback();
        }
        assertThat(count("original_key = 'J1'")).isZero();
    }

    @Test
    void sendAll_batch_reportsWhichWereEmitted() throws Exception {
        long b2;
        try (Connection c = PG.connection()) {
            outbox.send(c, message("B2", "s"));
            b2 = id("B2:s");
            List<Boolean> emitted = outbox.sendAll(c, List.of(message("B1", "s"), message("B2", "s"), message("B3", "s")));
            assertThat(emitted).containsExactly(true, false, true);
        }
        // what the database holds: one row per step key, the earlier B2 row untouched and the
        // two new rows written in the batch's order
        assertThat(count("original_key IN ('B1', 'B2', 'B3')")).isEqualTo(3);
        assertThat(count("step_key = 'B2:s'")).isEqualTo(1);
        assertThat(id("B1:s")).isGreaterThan(id("B2:s")).isLessThan(id("B3:s"));
        assertThat(id("B2:s")).isEqualTo(b2);
    }

    private static long id(String stepKey) throws Exception {
        try (Connection c = PG.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select id from " + tables.qualified(tables.outboxTable())
                        + " where step_key = '" + stepKey + "'")) {
            assertThat(rs.next()).as("row for %s", stepKey).isTrue();
            return rs.getLong(1);
        }
    }

    @Test
    void onSend_listenerRunsForEachSend_untilClosed() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        AutoCloseable registration = outbox.onSend(calls::incrementAndGet);
        try (Connection c = PG.connection()) {
            outbox.send(c, message("W1", "s"));
            registration.close();
            outbox.send(c, message("W2", "s"));
        }
        assertThat(calls).hasValue(1);
    }

    private static long count(String where) throws Exception {
        try (Connection c = PG.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select count(*) from " + tables.qualified(tables.outboxTable()) + " where " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
